"""Spawning harness processes: own process group, minimal environment, whole-group kill."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import IO

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from harness_hookspecs import HarnessError

#: Host variables a harness process may see; everything else must be passed explicitly.
BASE_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM")
MAX_LINE = 16 * 1024 * 1024
STDERR_TAIL = 8192


def base_environment(passthrough: Sequence[str] = ()) -> dict[str, str]:
    keys = (*BASE_ENV_KEYS, *passthrough)
    return {k: os.environ[k] for k in keys if k in os.environ}


class Process:
    """A running process in its own process group (see ``SessionContext.spawn``)."""

    def __init__(self, process: anyio.abc.Process, stderr_file: IO[bytes]) -> None:
        self._process = process
        self._stderr = stderr_file
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
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", MAX_LINE)
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
        await self._process.stdin.send(data)

    async def close_stdin(self) -> None:
        if self._process.stdin is not None:
            await self._process.stdin.aclose()

    async def wait(self) -> int:
        return await self._process.wait()

    def stderr_tail(self) -> bytes:
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read()
        except (OSError, ValueError):
            return b""

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sig)

    async def terminate(self, grace: float = 2.0) -> None:
        """SIGTERM the group, then SIGKILL it after ``grace`` seconds; always reaps."""
        with anyio.CancelScope(shield=True):
            if self._process.returncode is None:
                self.kill_group(signal.SIGTERM)
                with anyio.move_on_after(grace):
                    await self._process.wait()
            # The leader may be gone while children live on in its group.
            self.kill_group(signal.SIGKILL)
            if self._process.returncode is None:
                await self._process.wait()
            await self._process.aclose()
            self._stderr.close()


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    stdin: bool,
) -> Process:
    """Start ``argv`` in a new session (and so its own process group)."""
    if not argv:
        raise HarnessError("invalid-request", "empty command")
    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except FileNotFoundError:
        stderr_file.close()
        raise HarnessError("provider-unavailable", "the harness command was not found") from None
    except OSError:
        stderr_file.close()
        raise HarnessError("provider-unavailable", "the harness command could not start") from None
    return Process(process, stderr_file)
