"""Helpers the core's tests import (``from tests.helpers import ...``; tests/ is a package)."""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository checkout the tests run from.
ROOT = Path(__file__).resolve().parent.parent


def harness_cmd() -> list[str]:
    """The installed ``harness`` command of this interpreter's environment."""
    exe = Path(sys.executable).with_name("harness")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "harness_core.cli"]
