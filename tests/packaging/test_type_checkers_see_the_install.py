"""A plugin developer's mypy, run outside the checkout, resolves ``harness_core`` and
``harness_hookspecs`` from the installed distributions.

setuptools' default editable install for a flat layout is an import-hook finder that mypy cannot
follow (``import-not-found``); the pyprojects' ``package-dir`` makes it a plain path entry.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("mypy")

GOOD = """\
from harness_core import Controller, FunctionSession, Message, harness
from harness_hookspecs import HarnessError


@harness("typed")
async def typed(message: Message, session: FunctionSession) -> str:
    return message.content


def reason(error: HarnessError) -> str:
    return error.reason


CONTROLLER: type[Controller] = Controller
"""

# A wrong annotation proves the names resolved to real types (an unresolved import is ``Any``).
BAD = """\
from harness_core import Controller

WRONG: int = Controller
"""


def test_mypy_outside_the_checkout_resolves_the_installed_packages(tmp_path):
    (tmp_path / "good_plugin.py").write_text(GOOD)
    (tmp_path / "bad_plugin.py").write_text(BAD)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "good_plugin.py",
            "bad_plugin.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert "import-not-found" not in result.stdout, result.stdout
    assert not [line for line in lines if line.startswith("good_plugin.py")], result.stdout
    assert [line for line in lines if line.startswith("bad_plugin.py:3: error:")] == [
        "bad_plugin.py:3: error: Incompatible types in assignment (expression has type "
        '"type[Controller]", variable has type "int")  [assignment]'
    ], result.stdout
