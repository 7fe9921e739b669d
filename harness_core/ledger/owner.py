"""Who holds a session: this process's identity, and whether a recorded holder still lives.

An owner is ``HOST:PID:START`` where ``HOST`` is the host name and the kernel's boot id (so a
reboot is a new host) and ``START`` is the process's start time in clock ticks since boot
(``/proc/PID/stat`` field 22). A PID alone can be reused by an unrelated process after its owner
died; PID and start time together cannot. On the same host, liveness is exact; an owner on
another host is judged by its lease (the store's renewal time) instead.
"""

from __future__ import annotations

import functools
import os
import socket

from ..proctree import read_stat


def process_start(pid: int) -> str | None:
    """The start time of ``pid`` (``/proc/PID/stat`` field 22), ``None`` if it is gone (or a
    zombie: dead, only not yet reaped by its parent)."""
    info = read_stat(pid)
    return None if info is None or info.zombie else str(info.start)


@functools.cache
def host_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
    except OSError:
        boot = "noboot"
    return f"{socket.gethostname()}/{boot}"


def this_process() -> str:
    """This process's owner string (computed per call: a fork is another owner)."""
    pid = os.getpid()
    return f"{host_id()}:{pid}:{process_start(pid) or '?'}"


def same_process(pid: int, start: str | None) -> bool:
    """Whether ``pid`` is still the process that had start time ``start`` (not a reused PID)."""
    return start is not None and process_start(pid) == start


def owner_alive(owner: str) -> bool | None:
    """``True``/``False`` for an owner on this host; ``None`` (unknown) for another host."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3:
        return False
    host, pid, start = parts
    if host != host_id():
        return None
    try:
        return same_process(int(pid), start)
    except ValueError:
        return False
