"""Spawning harness processes: own session, minimal environment, whole-tree kill.

Every process gets an owner tag in its environment, dies with the controller
(``PR_SET_PDEATHSIG`` through util-linux ``setpriv``, where present) and, on terminate, is
killed with everything it started - its group, its descendants, and anything carrying its tag
even after ``setsid`` or a double fork (see :mod:`harness_core.proctree`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Mapping, Sequence

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from harness_hookspecs import HarnessError

from . import proctree

#: Host variables a harness process may see; everything else must be passed explicitly.
BASE_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM")
MAX_LINE = 16 * 1024 * 1024
STDERR_TAIL = 8192
#: After a program exits, how long its stderr reader may take to reach the pipe's end.
STDERR_SETTLE = 0.5
_serial = itertools.count(1)
#: ``setpriv --pdeathsig KILL --``: the child dies when the spawning thread's process dies.
_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")


def base_environment(passthrough: Sequence[str] = ()) -> dict[str, str]:
    keys = (*BASE_ENV_KEYS, *passthrough)
    return {k: os.environ[k] for k in keys if k in os.environ}


class StderrTail:
    """The last :data:`STDERR_TAIL` bytes a process wrote to stderr, read from a pipe by a
    daemon thread: bounded memory and no disk whatever the program writes (its stderr in a
    file grew without limit: a chatty CLI or a flooding program filled the disk)."""

    def __init__(self, read_end: int) -> None:
        self._fd = read_end
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="harness-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, 65536):
                with self._lock:
                    self._tail += chunk
                    if len(self._tail) > 2 * STDERR_TAIL:
                        del self._tail[:-STDERR_TAIL]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    async def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds, off the event loop, for the pipe's end: all of what
        an exited program wrote is then read (a child that kept the pipe open only delays)."""
        if self._thread.is_alive():
            await anyio.to_thread.run_sync(self._thread.join, timeout)

    def read(self) -> bytes:
        with self._lock:
            return bytes(self._tail[-STDERR_TAIL:])


class Process:
    """A running process in its own process group (see ``SessionContext.spawn``)."""

    def __init__(self, process: anyio.abc.Process, stderr: StderrTail, tag: str = "") -> None:
        self._process = process
        self._stderr = stderr
        self._stderr_settled = False
        self.tag = tag
        # Its own cgroup where possible, moved in before the program has had time to fork: a
        # daemon that double-forks and scrubs its environment at once is found by nothing
        # else. (The move waits for an RCU grace period, 10-20 ms, on the path to the CLI's
        # start; done on a thread beside the starting program, the hygiene test's daemon got out.)
        self._cgroup = proctree.place(process.pid, tag.partition("/")[2]) if tag else None
        info = proctree.read_stat(process.pid)
        self._leader = (process.pid, info.start if info is not None else -1)
        #: Set when reading or writing was cancelled mid-way: the program's stream position is
        #: unknown, so it cannot serve another turn (see RuntimeSessionContext.kill_processes).
        self.interrupted = False
        #: The task that last read this process's output (None: not read since the last turn).
        self.reader: int | None = None
        self._terminated = False
        self._stdout = (
            BufferedByteReceiveStream(process.stdout) if process.stdout is not None else None
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def lines(self) -> AsyncIterator[bytes]:
        if self._stdout is None:
            return
        cancelled = anyio.get_cancelled_exc_class()
        while True:
            self.reader = anyio.get_current_task().id
            try:
                line = await self._stdout.receive_until(b"\n", MAX_LINE)
            except cancelled:
                self.interrupted = True
                raise
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
                rest = self._stdout.buffer
                if rest:
                    yield bytes(rest)
                return
            except anyio.DelimiterNotFound:
                raise HarnessError("provider-failed", "an output line exceeded 16 MiB") from None
            yield line.rstrip(b"\r")

    async def send(self, data: bytes) -> None:
        if self._process.stdin is None:
            raise HarnessError("provider-failed", "the process has no stdin")
        try:
            await self._process.stdin.send(data)
        except anyio.get_cancelled_exc_class():
            self.interrupted = True
            raise

    async def close_stdin(self) -> None:
        if self._process.stdin is not None:
            await self._process.stdin.aclose()

    async def wait(self) -> int:
        """The exit status, once the program has exited and what it wrote to stderr is read
        (at most :data:`STDERR_SETTLE` seconds more: :meth:`stderr_tail` is then complete)."""
        code = await self._process.wait()
        if not self._stderr_settled:
            self._stderr_settled = True
            await self._stderr.settle(STDERR_SETTLE)
        return code

    def stderr_tail(self) -> bytes:
        """The last :data:`STDERR_TAIL` bytes the program wrote to stderr (all of them once
        :meth:`wait` returned)."""
        return self._stderr.read()

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)

    def _tree(self) -> set[int]:
        return proctree.members(proctree.snapshot(), (self._leader,), self.tag)

    def _sweep(self, tree: set[int], in_cgroup: set[int]) -> None:
        """After the SIGKILL: sweep ``/proc`` for what the cgroup does not hold (no cgroup;
        forked in the moment before the leader was moved in) while the cgroup's processes
        die, then wait for the cgroup to be empty."""
        proctree.kill_all((self._leader,), self.tag, signalled=tree, handled=in_cgroup)
        proctree.finish_cgroup(self._cgroup, in_cgroup | tree, spawned=(self._leader[0],))

    async def terminate(self, grace: float = 2.0, *, linger: float = 0.0) -> None:
        """Wait ``linger`` seconds for a voluntary exit, SIGTERM the group and everything it
        started, SIGKILL all of it after ``grace`` seconds (``grace`` 0: SIGKILL at once);
        always reaps. Once done (an adapter may stop its process itself when the turn's outcome
        is known), calling it again does nothing."""
        if self._terminated:
            return
        with anyio.CancelScope(shield=True):
            if linger > 0 and self._process.returncode is None:
                with anyio.move_on_after(linger):
                    await self._process.wait()
            tree: set[int] = set()
            if self._process.returncode is None and grace > 0:
                # Found while the leader lives: its descendants by ancestry, not only by tag.
                tree = await anyio.to_thread.run_sync(self._tree)
                self.kill_group(signal.SIGTERM)
                proctree.signal_all(tree - {self._leader[0]}, signal.SIGTERM)
                proctree.signal_cgroup(self._cgroup, signal.SIGTERM)
                with anyio.move_on_after(grace):
                    await self._process.wait()
            fresh: set[int] = set()
            if self._process.returncode is None:
                # Its subtree by ancestry, read now (the kill re-parents it): the leader's
                # children files, no scan of all /proc where the kernel has them.
                subtree = proctree.descendants(*self._leader)
                fresh = await anyio.to_thread.run_sync(self._tree) if subtree is None else subtree
            # The leader may be gone while children live on in its group, or left it.
            self.kill_group(signal.SIGKILL)
            in_cgroup = proctree.signal_cgroup(self._cgroup)
            proctree.signal_all(fresh - {self._leader[0]}, signal.SIGKILL)
            await anyio.to_thread.run_sync(self._sweep, tree | fresh, in_cgroup)
            if self._process.returncode is None:
                await self._process.wait()
            await self._process.aclose()
            self._terminated = True


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    stdin: bool,
    tag_prefix: str = "",
) -> Process:
    """Start ``argv`` in a new session (and so its own process group), tagged and tied to us."""
    if not argv:
        raise HarnessError("invalid-request", "empty command")
    proctree.prepare_move()  # for place() in Process, while the rest of the spawn goes on
    proctree.ensure_watchdog()  # first: it must not be re-parented to us
    proctree.become_subreaper()
    tag = f"{proctree.owner()}/{tag_prefix}{next(_serial)}"
    env = {**env, proctree.OWNER_ENV: tag}
    command = list(argv)
    if _SETPRIV is not None:
        # setpriv reports a missing program as exit 127, not as an error we can map: look first.
        if _resolve(command[0], env, cwd) is None:
            raise HarnessError("provider-unavailable", not_found(command[0]))
        command = [_SETPRIV, "--pdeathsig", "KILL", "--", *command]
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        process = await anyio.open_process(
            command,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write_end,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except FileNotFoundError:
        os.close(read_end)
        raise HarnessError("provider-unavailable", not_found(argv[0])) from None
    except OSError:
        os.close(read_end)
        raise HarnessError("provider-unavailable", "the harness command could not start") from None
    finally:
        os.close(write_end)  # the child holds its copy: the pipe ends when the program's tree does
    return Process(process, StderrTail(read_end), tag)


def not_found(program: str) -> str:
    """The hint of a command that is not there: which one, and where it was looked for."""
    where = "is not an executable file" if os.sep in program else "was not found on PATH"
    return f"the harness command {program[-160:]!r} {where}"


def _resolve(program: str, env: Mapping[str, str], cwd: str | None) -> str | None:
    if os.sep in program:
        path = program if os.path.isabs(program) else os.path.join(cwd or os.getcwd(), program)
        return path if os.access(path, os.X_OK) and not os.path.isdir(path) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))
