"""Questions about the process table for the conformance kit and the tests: is a pid alive,
who is in a group, whose children, who carries a marker. Built on :mod:`harness_core.proctree`
(the runtime's own ``/proc`` reader); ``harness_core.testing.processes`` re-exports these.
Without ``/proc`` every answer is empty.
"""

from __future__ import annotations

import os
import time

from .proctree import read_stat, snapshot


def alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    info = read_stat(pid)
    return info is not None and not info.zombie


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    return [p.pid for p in snapshot().values() if not p.zombie and p.pgid == pgid]


def children(parent: int | None = None) -> dict[int, int]:
    """Live children of ``parent`` (default: this process): pid -> process group."""
    parent = os.getpid() if parent is None else parent
    return {p.pid: p.pgid for p in snapshot().values() if not p.zombie and p.ppid == parent}


def wait_gone(pgid: int, timeout: float = 5.0) -> list[int]:
    """Wait until the group is empty; return whoever is still there at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = group_members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def with_marker(marker: str) -> list[int]:
    """Pids (other than this process) whose command line contains ``marker``."""
    found = []
    for pid in snapshot():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(pid)
        except OSError:
            pass
    return found
