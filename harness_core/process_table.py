"""Questions about the process table for the conformance kit and the tests: is a pid alive,
who is in a group, whose children, who carries a marker. Built on :mod:`harness_core.proctree`
(the runtime's own ``/proc`` reader); ``harness_core.testing.processes`` re-exports these.
Without ``/proc`` every answer is empty.
"""

from __future__ import annotations

import os
import time
from typing import Any

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


def survivors_of_a_killed_starter(code: str, pids_of: Any, timeout: float = 10.0) -> list[int]:
    """Run ``code`` in a new Python process that prints one line (``started ...`` once it has
    started what the test is about, or ``unavailable REASON``) and then blocks; SIGKILL it, and
    return which of ``pids_of(line)``'s processes are still alive after ``timeout`` (they get
    SIGKILL then, so nothing is left either way). ``unavailable``: raises :class:`LookupError`
    with the reason (the caller skips)."""
    import signal
    import subprocess
    import sys

    starter = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert starter.stdout is not None
    line = starter.stdout.readline().strip()
    if not line.startswith("started"):
        starter.kill()
        starter.wait()
        raise LookupError(line.partition(" ")[2] or "it printed nothing")
    pids = list(pids_of(line))
    assert pids and all(alive(pid) for pid in pids), (line, pids)
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left
