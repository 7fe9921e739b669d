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
