"""harnessplane-fake-model as its own distribution: the core re-exports it, does not need it
(nor aiohttp), and ``harness fake-model`` is its command (absent without it)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import harness_fake_model
import pytest

from harness_core.testing import fake_model as reexport

PACKAGE = Path(harness_fake_model.__file__).parent


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def cli_without(module: str) -> str:
    """``harness fake-model serve`` in a Python where importing ``module`` fails."""
    return (
        "import sys\n"
        f"sys.modules[{module!r}] = None  # import of it now raises ModuleNotFoundError\n"
        "from harness_core.cli import main\n"
        "sys.exit(main(['fake-model', 'serve', '--port', '0']))\n"
    )


def test_the_core_reexports_the_same_objects():
    assert set(harness_fake_model.__all__) <= set(reexport.REEXPORTED.split())
    for name in harness_fake_model.__all__:
        assert getattr(reexport, name) is getattr(harness_fake_model, name)
    with pytest.raises(AttributeError):
        _ = reexport.NoSuchName


@pytest.mark.parametrize("missing", ["harness_fake_model", "aiohttp"])
def test_harness_fake_model_without_the_distribution_is_no_command(missing):
    # The command is the plugin's (register_commands): without it, harness has no such command.
    result = run_python(cli_without(missing))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(
        "harness: error: invalid-request: argument COMMAND: invalid choice: 'fake-model' "
    )
    assert len(result.stderr.splitlines()) == 1


def test_harness_fake_model_is_the_plugins_command():
    result = run_python("from harness_core.cli import main\nmain(['fake-model', '--help'])")
    assert result.returncode == 0, result.stderr
    assert "run the scripted fake model server" in result.stdout


def test_importing_the_reexport_needs_nothing_until_a_name_is_used():
    result = run_python(
        "import sys\n"
        "sys.modules['harness_fake_model'] = None\n"
        "import harness_core, harness_core.cli, harness_core.testing.fake_model as fm\n"
        "try:\n"
        "    fm.FakeModelServer\n"
        "except ModuleNotFoundError as error:\n"
        "    print(type(error).__name__, error.name, error)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("FakeModelNotInstalled harness_fake_model the fake model")


def test_the_core_does_not_depend_on_aiohttp_and_the_testing_extra_brings_the_fake_model():
    requires = metadata.requires("harnessplane") or []
    assert not [r for r in requires if r.startswith("aiohttp")], requires
    testing = [r for r in requires if 'extra == "testing"' in r]
    assert any(r.startswith("harnessplane-fake-model") for r in testing), testing
    own = metadata.requires("harnessplane-fake-model") or []
    assert [r for r in own if "extra ==" not in r] == [
        "aiohttp>=3.9",
        "harnessplane-hookspecs>=0.1.0",
    ]


def test_no_module_of_the_package_reaches_650_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert sizes and max(sizes.values()) < 650, sizes


def test_python_dash_m_serves():
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_fake_model", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("fake model server listening on http://127.0.0.1:"), line
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0
