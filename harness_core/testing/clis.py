"""Where the test suite's pinned harness CLIs live: the directories in ``HARNESS_CLI_PATH``.

The suite sets it (``harness_cli_path`` in the pytest config, exported by harness_cli_kit's pytest
plugin); this module does not know the checkout's layout.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness_hookspecs import HarnessError

CLI_PATH_ENV = "HARNESS_CLI_PATH"


def cli_dirs() -> list[Path]:
    return [Path(p) for p in os.environ.get(CLI_PATH_ENV, "").split(os.pathsep) if p]


#: The first pinned-CLI directory (read at import; the pytest plugin sets the variable first).
NPM_BIN = next(iter(cli_dirs()), Path(f"${CLI_PATH_ENV}"))


def find_cli(name: str) -> str:
    """``name`` in the pinned-CLI directories when present, else ``PATH``."""
    for directory in cli_dirs():
        candidate = directory / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise HarnessError("provider-unavailable", f"{name} is not installed")
    return found
