"""The plugin imports httpx without its command-line client (click, pygments, rich: ~40 ms of a
`harness run opencode`), and `httpx.main` still is that client when someone uses it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import harness_opencode
heavy = [m for m in ("httpx._main", "rich", "click", "pygments") if m in sys.modules]
import httpx
from httpx._main import main
print(heavy, httpx.main.name == main.name, "httpx._main" in sys.modules)
try:
    httpx.main(["--help"])
except SystemExit as done:
    print("exit", done.code)
"""


def test_httpx_is_imported_without_its_cli_which_still_works() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "[] True True"
    assert "Usage" in done.stdout
    assert lines[-1] == "exit 0"
