"""Where the pinned harness CLIs live (``tools/npm``, installed by ``.ci/install-clis.sh``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness_hookspecs import HarnessError

#: ``tools/npm/node_modules/.bin`` of the checkout harness_core is imported from.
NPM_BIN = Path(__file__).resolve().parents[2] / "tools" / "npm" / "node_modules" / ".bin"


def find_cli(name: str) -> str:
    """The pinned CLI in the checkout's ``tools/npm`` when present, else ``PATH``."""
    candidate = NPM_BIN / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise HarnessError("provider-unavailable", f"{name} is not installed")
    return found
