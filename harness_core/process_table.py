"""Reading the process table (``/proc``): is a pid alive, who is in a group, whose children.

One place for both the conformance kit (which watches what a turn leaves behind) and the tests
(``harness_core.testing.processes`` re-exports these). Without ``/proc`` every answer is empty.
"""

from __future__ import annotations

import os
import time


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # The command name may contain spaces and parentheses: split after the last ')'.
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _pids() -> list[str]:
    try:
        return [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in _pids():
        fields = _stat(entry)
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def children(parent: int | None = None) -> dict[int, int]:
    """Live children of ``parent`` (default: this process): pid -> process group."""
    parent = os.getpid() if parent is None else parent
    found: dict[int, int] = {}
    for entry in _pids():
        fields = _stat(entry)
        if fields is not None and fields[0] != "Z" and int(fields[1]) == parent:
            found[int(entry)] = int(fields[2])
    return found


def wait_gone(pgid: int, timeout: float = 5.0) -> list[int]:
    """Wait until the group is empty; return whoever is still there at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = group_members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)
