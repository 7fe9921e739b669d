"""Questions about the process table for the conformance kit and the tests: is a pid alive,
who is in a group, whose children, who carries a marker. Built on :mod:`harness_core.proctree`
(the runtime's own ``/proc`` reader); ``harness_core.testing.processes`` re-exports these.
Without ``/proc`` every answer is empty.
"""

from __future__ import annotations

import os
import time

from .proctree import owner_tag, read_stat, reap, snapshot


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


def tagged(prefix: str) -> list[int]:
    """Live processes whose owner tag starts with ``prefix``: what one controller process
    (``"<pid>-"``) or one of its sessions spawned, the spawns' children included."""
    return [
        info.pid
        for info in snapshot().values()
        if not info.zombie and (owner_tag(info.pid) or "").startswith(prefix)
    ]


def left_behind(prefix: str, marker: str, timeout: float = 10.0) -> list[int]:
    """Whoever is still there after ``timeout``: tagged with ``prefix`` or running a command
    that carries ``marker``. Reaps the zombies this process inherits as a subreaper (the
    children of a killed controller)."""
    deadline = time.monotonic() + timeout
    while True:
        reap(tagged(prefix))
        left = sorted(set(tagged(prefix)) | set(with_marker(marker)))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
