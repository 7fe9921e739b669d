"""Finding every process a spawn started, wherever it went, and killing it (Linux ``/proc``).

A harness may leave its process group: ``setsid``, a double fork, a daemon. Three ties survive
that, and a process matching any one of them belongs to the spawn:

- **the owner tag**: every spawned process gets ``HARNESS_PROCESS_OWNER=<owner>/<n>`` in its
  environment (``<owner>`` is this controller process's pid and start time); children inherit it
  through ``setsid`` and double forks alike (a process that also clears its environment loses it);
- **ancestry**: descendants of the leader by parent pid (the controller is a child subreaper, so
  orphans are re-parented to it instead of init and stay reachable);
- **group and session**: members of the leader's process group or session.

Killing is done in rounds (signal everything found, look again) so a process forking while it is
being killed is found in the next round. Zombies re-parented to the controller are reaped here;
only processes attributed to a spawn are waited for, never another child of the host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

#: The environment variable carrying a spawned process's owner tag.
OWNER_ENV = "HARNESS_PROCESS_OWNER"
PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 50
_OWNER_KEY = (OWNER_ENV + "=").encode()

_subreaper_pid: int | None = None
_owner: tuple[int, str] | None = None


class ProcInfo(NamedTuple):
    pid: int
    ppid: int
    pgid: int
    sid: int
    zombie: bool
    start: int  # clock ticks after boot: with the pid, names one process for good


def read_stat(pid: int | str) -> ProcInfo | None:
    try:  # os-level calls: a scan reads every process's stat, file objects cost 3x
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    # The command name may contain spaces and parentheses: split after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return ProcInfo(
            int(pid), int(fields[1]), int(fields[2]), int(fields[3]), fields[0] in (b"Z", b"X"),
            int(fields[19]),
        )  # fmt: skip
    except (IndexError, ValueError):
        return None


def snapshot() -> dict[int, ProcInfo]:
    """Every process visible in ``/proc`` (an empty table where there is no ``/proc``)."""
    table: dict[int, ProcInfo] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            info = read_stat(entry)
            if info is not None:
                table[info.pid] = info
    return table


def owner_tag(pid: int) -> str | None:
    """The ``HARNESS_PROCESS_OWNER`` value in a live process's environment, if readable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    for item in data.split(b"\0"):
        if item.startswith(_OWNER_KEY):
            return item[len(_OWNER_KEY) :].decode("ascii", "replace")
    return None


def owner() -> str:
    """This process's owner token: ``<pid>-<start time>`` (unique even after pid reuse)."""
    global _owner
    pid = os.getpid()
    if _owner is None or _owner[0] != pid:  # recomputed in a forked child
        info = read_stat(pid)
        _owner = (pid, f"{pid}-{info.start if info is not None else int(time.time())}")
    return _owner[1]


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (Linux); once per process."""
    global _subreaper_pid
    if _subreaper_pid == os.getpid():
        return True
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here: only processes that spawn need it

    try:
        # The running program's own symbols include libc's prctl: no find_library(), which
        # runs `ldconfig -p` (2-20 ms per `harness run`).
        libc = ctypes.CDLL(None, use_errno=True)
        if not hasattr(libc, "prctl"):
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    _subreaper_pid = os.getpid()
    return True


def members(
    table: dict[int, ProcInfo],
    leaders: Iterable[tuple[int, int]],
    tag: str,
    *,
    prefix: bool = False,
) -> set[int]:
    """Processes tied to ``leaders`` (pid, start time) or carrying ``tag`` (``prefix``: any tag
    starting with it). A leader counts only while its pid still names the same process."""
    leaders = tuple(leaders)
    roots = {pid for pid, start in leaders if pid in table and table[pid].start == start}
    # Only a process started after the leader (or, for a whole owner, after the controller) can
    # carry its tag: the environment of older ones is not read (that is most of the cost).
    since = min((start for _, start in leaders), default=_tag_start(tag))
    # A pid in use as a group or session id is never reused, so these ties stay valid after the
    # leader is gone.
    groups = {pid for pid, _ in leaders}
    found = {p.pid for p in table.values() if p.pid in roots or p.pgid in groups or p.sid in groups}
    for info in table.values():
        if info.pid in found or info.zombie or info.start < since:
            continue
        value = owner_tag(info.pid)
        if value is not None and (value.startswith(tag) if prefix else value == tag):
            found.add(info.pid)
    # Descendants by ancestry (children of the subreaper orphans included).
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    # A dead session or group leader re-parented to us (the middle of a double fork) is known
    # by who it led.
    me = os.getpid()
    led = {table[p].sid for p in found} | {table[p].pgid for p in found}
    found |= {pid for pid in led if pid in table and table[pid].zombie and table[pid].ppid == me}
    found.discard(me)
    return found


def _tag_start(tag: str) -> int:
    """The owner's start time from a tag ``<pid>-<start>/...`` (0 when it has none)."""
    start = tag.split("/", 1)[0].rpartition("-")[2]
    return int(start) if start.isdigit() else 0


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


_children_files: bool | None = None


def descendants(pid: int, start: int) -> set[int] | None:
    """The live descendants of ``pid`` (while it is the process that started at ``start``)
    from ``/proc/PID/task/TID/children``: the leader's subtree alone, not a scan of all of
    ``/proc``. ``None`` where the kernel has no such file (then :func:`snapshot` it is)."""
    global _children_files
    if _children_files is None:
        me = os.getpid()
        _children_files = os.path.exists(f"/proc/{me}/task/{me}/children")
    if not _children_files:
        return None
    info = read_stat(pid)
    if info is None or info.start != start:
        return set()
    found: set[int] = set()
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                fd = os.open(f"/proc/{parent}/task/{tid}/children", os.O_RDONLY)
            except OSError:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            finally:
                os.close(fd)
            for child in map(int, data.split()):
                if child not in found:
                    found.add(child)
                    stack.append(child)
    return found


def reap(pids: Iterable[int]) -> None:
    """Wait for those of ``pids`` that are zombies re-parented to this process."""
    me = os.getpid()
    for pid in pids:
        info = read_stat(pid)
        if info is not None and info.zombie and info.ppid == me:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def kill_all(
    leaders: Iterable[tuple[int, int]],
    tag: str,
    *,
    prefix: bool = False,
    signalled: Iterable[int] = (),
    handled: Iterable[int] = (),
) -> set[int]:
    """SIGKILL everything tied to ``leaders`` or ``tag`` until nothing is left; reap our zombies
    among those and ``signalled`` (found and signalled earlier: a zombie has no tag to find).
    ``handled``: pids killed and waited for another way (a ``cgroup.kill``), left alone here.

    Returns the pids that were killed. Never signals this process.
    """
    leaders = tuple(leaders)
    # The leaders themselves are waited for by whoever spawned them (anyio), never here.
    spawned = {pid for pid, _ in leaders}
    skip = set(handled)
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        table = snapshot()
        found = members(table, leaders, tag, prefix=prefix) - skip
        live = {pid for pid in found if not table[pid].zombie}
        reap(found - live - spawned)
        if not live:
            break
        signal_all(live, signal.SIGKILL)
        killed |= live
        time.sleep(0.002)
    _reap_when_dead((killed | set(signalled)) - spawned - skip)
    return killed


def _reap_when_dead(pids: set[int], timeout: float = 2.0) -> None:
    """SIGKILL is delivered asynchronously: wait for each to die, reaping those that are ours."""
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            info = read_stat(pid)
            if info is None or (info.zombie and info.ppid != me):
                pids.discard(pid)  # gone, or someone else's to reap
            elif info.zombie:
                with contextlib.suppress(ChildProcessError, OSError):
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        pids.discard(pid)  # reaped: no need to look again 2 ms later
        if pids:
            time.sleep(0.002)


# -- a cgroup (v2) per spawn, where the hierarchy is writable ---------------------------------
#
# ``cgroup.kill`` takes every process that was ever started inside, whatever it did to its
# ancestry, group, session or environment. Used where this process may create cgroups below its
# own (typically root); elsewhere the tag/ancestry/group ties above do the work alone.

_cgroup_base: tuple[int, Path | None] | None = None


def _cgroup2_root() -> Path | None:
    try:
        with open("/proc/self/mounts") as handle:
            mounts = [line.split() for line in handle]
        with open("/proc/self/cgroup") as handle:
            own = next((line[3:].strip() for line in handle if line.startswith("0::")), None)
    except OSError:
        return None
    mount = next((m[1] for m in mounts if len(m) > 2 and m[2] == "cgroup2"), None)
    if mount is None or own is None:
        return None
    return Path(mount) / own.lstrip("/")


def cgroup_base(owner_token: str | None = None) -> Path | None:
    """``<our cgroup>/harness-<owner>``, created on first use; None where not writable."""
    global _cgroup_base
    if owner_token is not None:  # the watchdog: another process's owner
        root = _cgroup2_root()
        return root / f"harness-{owner_token}" if root is not None else None
    if _cgroup_base is not None and _cgroup_base[0] == os.getpid():
        return _cgroup_base[1]
    base: Path | None = None
    root = _cgroup2_root()
    if root is not None and os.access(root / "cgroup.procs", os.W_OK):
        candidate = root / f"harness-{owner()}"
        try:
            candidate.mkdir(exist_ok=True)
            if (candidate / "cgroup.kill").exists():
                base = candidate
            else:
                candidate.rmdir()  # a kernel without cgroup.kill (< 5.14)
        except OSError:
            base = None
    _cgroup_base = (os.getpid(), base)
    return base


def prepare_move() -> None:
    """Start a no-op move of this process into its own cgroup, on a thread, a few ms before
    :func:`place`. A process's first move into a cgroup waits for an RCU grace period (10-25
    ms: the kernel's cgroup lock leaves its fast path for a while); started here, that wait
    overlaps the rest of the spawn, and :func:`place`'s move right after takes 0.2-7 ms."""
    base = cgroup_base()
    if base is None:
        return
    procs = base.parent / "cgroup.procs"  # our own cgroup: moving there changes nothing

    def move() -> None:
        with contextlib.suppress(OSError):
            procs.write_text(str(os.getpid()))

    import threading

    threading.Thread(target=move, name="harness-cgroup-lock", daemon=True).start()


def place(pid: int, name: str) -> Path | None:
    """Move ``pid`` into a fresh cgroup ``name`` below :func:`cgroup_base` (None: not possible)."""
    base = cgroup_base()
    if base is None:
        return None
    if _unremoved:
        remove_cgroups()
    path = base / name.replace("/", "_")
    try:
        path.mkdir()
        (path / "cgroup.procs").write_text(str(pid))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _cgroup_pids(path: Path) -> set[int]:
    try:
        return {int(x) for x in (path / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def signal_cgroup(path: Path | None, sig: int = signal.SIGKILL) -> set[int]:
    """Signal everything in the cgroup (SIGKILL: ``cgroup.kill``, which also takes what forks
    meanwhile); returns the pids that were in it (to reap once dead)."""
    if path is None:
        return set()
    pids = _cgroup_pids(path)
    if pids:
        if sig == signal.SIGKILL:
            with contextlib.suppress(OSError):
                (path / "cgroup.kill").write_text("1")
        else:
            signal_all(pids, sig)
    return pids


def wait_empty(path: Path, timeout: float = 2.0) -> bool:
    """Wait until no task is left in the cgroup (every thread of every process has exited):
    ``poll`` on ``cgroup.events``, which the kernel marks when ``populated`` changes."""
    import select  # here: only processes that spawn need it

    try:
        fd = os.open(path / "cgroup.events", os.O_RDONLY)
    except OSError:
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLPRI | select.POLLERR)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if b"populated 0" in os.pread(fd, 256, 0):
                    return True
            except OSError:
                return True  # removed
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            # capped: a notification missed between the read and the poll costs 20 ms at most
            poller.poll(min(left, 0.02) * 1000)
    finally:
        os.close(fd)


def finish_cgroup(path: Path | None, pids: Iterable[int] = (), spawned: Iterable[int] = ()) -> None:
    """After :func:`signal_cgroup`: wait until the cgroup is empty, reap our zombies among
    ``pids`` (not ``spawned``, which their spawner waits for), remove it."""
    if path is None:
        return
    wait_empty(path)
    _reap_when_dead(set(pids) - set(spawned))
    remove_cgroups(path)


#: Empty cgroups the kernel would not remove yet: rmdir is EBUSY for a few ms after
#: "populated 0" (the last task's unlink); retried at the next spawn and end, and removed by
#: the watchdog at the latest. Nothing runs in them: no turn waits for that.
_unremoved: list[Path] = []


def remove_cgroups(path: Path | None = None) -> None:
    """Remove ``path`` (an emptied turn cgroup) and any an earlier try found still busy (kept
    to retry)."""
    for cgroup in [*_unremoved, *([path] if path is not None else [])]:
        try:
            cgroup.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            if cgroup not in _unremoved:
                _unremoved.append(cgroup)
            continue
        if cgroup in _unremoved:
            _unremoved.remove(cgroup)


def kill_cgroup(path: Path | None, spawned: Iterable[int] = ()) -> None:
    """Kill everything in the cgroup, reap our zombies among it (not ``spawned``), remove it."""
    finish_cgroup(path, signal_cgroup(path), spawned)


def kill_cgroups(owner_token: str) -> None:
    """Kill and remove every cgroup of an owner, then its base (the watchdog's sweep)."""
    base = cgroup_base(owner_token)
    if base is None or not base.is_dir():
        return
    for child in base.iterdir():
        if child.is_dir():
            kill_cgroup(child)
    # Each rmdir may be EBUSY for a few ms: the last task's unlink, then the child's going
    # offline for its parent's.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        remove_cgroups(base)
        if not _unremoved:
            return
        time.sleep(0.002)


# -- the watchdog: kills what a crashed controller left behind -------------------------------

_watchdog: tuple[int, object, int] | None = None  # (owner pid, Popen, write end of its pipe)


def ensure_watchdog() -> None:
    """Start this process's watchdog once: a small process in its own session that waits for
    EOF on a pipe only we hold, then kills every process carrying our owner tag. It covers the
    crash the controller cannot clean up after (``kill -9``); PR_SET_PDEATHSIG covers leaders."""
    global _watchdog
    if _watchdog is not None and _watchdog[0] == os.getpid():
        return
    if not sys.platform.startswith("linux"):
        return
    import subprocess

    read_end, write_end = os.pipe()  # both close-on-exec: no harness process inherits them
    try:
        # It detaches (forks, the parent exits at once): not a child of ours, so it never shows
        # among the processes a harness started. Call this before become_subreaper, or the
        # detached watchdog would be re-parented to us.
        # (A shell backgrounds it and exits at once: waiting for the shell costs ~1 ms.)
        # (A background job's stdin is /dev/null: the pipe goes through fd 3.)
        process = subprocess.Popen(
            ["/bin/sh", "-c", 'exec 3<&0; "$@" <&3 3<&- &', "sh", sys.executable, "-I", "-S",
             os.path.abspath(__file__), "--watch", owner()],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        process.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        os.close(write_end)
        return
    finally:
        os.close(read_end)
    _watchdog = (os.getpid(), process, write_end)


#: The tag separator of a service tied to this process's life (a test's database server), kept
#: apart from ``<owner>/``, what the runtime spawned and sweeps itself.
TIED = "+"


def tied_to_this_process(name: str) -> dict[str, str]:
    """The environment entry that ties a long-lived helper process (and whatever it forks) to
    this process: the watchdog kills it if this process dies without stopping it. For services
    started by a program the caller does not spawn itself (``pg_ctl`` daemonizes the server;
    temporalio spawns its dev server from ``os.environ``)."""
    ensure_watchdog()
    return {OWNER_ENV: f"{owner()}{TIED}{name}"}


def _watch(owner_token: str) -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # a terminal's Ctrl-C must not take us first
    stdin = sys.stdin.buffer
    while stdin.read(4096):
        pass
    kill_cgroups(owner_token)
    kill_all((), owner_token + "/", prefix=True)
    kill_all((), owner_token + TIED, prefix=True)
    return 0


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--watch":
    sys.exit(_watch(sys.argv[2]))
