"""Run the real ``harness`` script in a subprocess (shared by the CLI tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import harness_cmd


def harness(env, *args, stdin=None, cwd=None, timeout=60):
    """``harness *args``; stdin is ``stdin`` (text) or empty, never the test runner's."""
    return subprocess.run(
        [*harness_cmd(), *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        cwd=cwd,
        timeout=timeout,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def install_harness(site: Path, name: str, source: str) -> None:
    """Make the one-function harness ``name`` (``source`` defines ``run``) installable from
    ``site`` (put it on ``PYTHONPATH``): a module and a dist-info with its entry point."""
    import textwrap

    module = f"{name}_harness"
    site.mkdir(exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    dist = f"{name}-harness"
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[harness_core]\n{name} = {module}:run\n")
