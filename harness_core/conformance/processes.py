"""The processes a conformance run saw start, and whether they are gone when they should be."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from attrs import define

from ..process_table import alive, group_members

#: How long processes may take to disappear after a cancel or a close.
PROCESS_WAIT = 3.0


@define
class SeenProcess:
    """A process started during the run, and what it belonged to."""

    pid: int
    pgid: int
    session: Any  # the SessionContext it was started under (its session_id is read late)
    turn_id: str | None
    lifetime: str  # "turn" | "session" | "direct"


def survivors(processes: Sequence[SeenProcess], timeout: float = PROCESS_WAIT) -> list[int]:
    """Wait up to ``timeout`` for the processes (and their groups) to go; return who is left."""
    own_group = os.getpgid(0)
    deadline = time.monotonic() + timeout
    while True:
        left: set[int] = set()
        for proc in processes:
            if proc.pgid != own_group:
                left.update(group_members(proc.pgid))
            elif alive(proc.pid):
                left.add(proc.pid)
        if not left or time.monotonic() > deadline:
            return sorted(left)
        time.sleep(0.02)


def kill_leftovers(processes: Sequence[SeenProcess]) -> None:
    """SIGKILL whatever the run recorded that is still there, and reap it (bounded)."""
    own_group = os.getpgid(0)
    for proc in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if proc.pgid != own_group:
                os.killpg(proc.pgid, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    pending = list(processes)
    while pending and time.monotonic() < deadline:
        for proc in list(pending):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, os.WNOHANG)
            if not alive(proc.pid):
                pending.remove(proc)
        if pending:
            time.sleep(0.01)
