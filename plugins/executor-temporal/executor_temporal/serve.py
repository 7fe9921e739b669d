"""``harness serve --temporal ADDRESS``: the HTTP API and the viewer over Temporal workers.

:class:`ServedOnTemporal` answers what ``harness serve`` asks of a controller with a
:class:`~executor_temporal.client.TemporalController`: sessions open and close as workflows,
turns run on workers (the events come from the shared ledger, as the viewer reads them),
cancel is the workflow's signal, and approvals wait in the server's queue (the approve
endpoint answers them, as locally). Names and descriptions come from this host's plugins, and
exports from the ledger. Steer, fork, checkpoints and rewind are the workflow's updates
(:class:`~executor_temporal.client.TemporalController`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from harness_hookspecs import HarnessError, SessionRef, SessionRewound

from harness_core import Controller
from harness_core.approvals import PendingApprovals

from .client import RemoteTurn, TemporalController
from .connection import TemporalConnection
from .shapes import TASK_QUEUE

#: How long a new turn waits for the session's previous turn here to settle.
SETTLE_SECONDS = 30.0


class _Approvals:
    """``controller.approvals`` as ``harness serve`` reads it: the handler requests wait in."""

    def __init__(self, handler: PendingApprovals) -> None:
        self.handler = handler


class ServedOnTemporal:
    """A controller for ``harness serve`` whose turns run on Temporal workers (``async with``)."""

    def __init__(
        self, connection: TemporalConnection, *, ledger: str, task_queue: str = TASK_QUEUE
    ) -> None:
        self.connection = connection
        self.ledger_url = ledger
        self.task_queue = task_queue
        self.approvals = _Approvals(PendingApprovals())
        self._running: dict[str, RemoteTurn] = {}
        #: set once the session's last turn here has settled (its update returned)
        self._settled: dict[str, anyio.Event] = {}
        self._stack = AsyncExitStack()
        self._remote: TemporalController | None = None
        self._local: Controller | None = None

    async def __aenter__(self) -> ServedOnTemporal:
        remote = await TemporalController.connect(
            self.connection.address,
            ledger=self.ledger_url,
            connection=self.connection,
            task_queue=self.task_queue,
            permission_handler=self.approvals.handler,
        )
        self._remote = await self._stack.enter_async_context(remote)
        # this host's plugins (names, descriptions) and exports; it runs no turn
        self._local = await self._stack.enter_async_context(Controller(ledger=remote.ledger))
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.aclose()

    @property
    def remote(self) -> TemporalController:
        if self._remote is None:
            raise HarnessError("invalid-request", "use ServedOnTemporal inside `async with`")
        return self._remote

    @property
    def local(self) -> Controller:
        if self._local is None:
            raise HarnessError("invalid-request", "use ServedOnTemporal inside `async with`")
        return self._local

    @property
    def ledger(self) -> Any:
        return self.remote.ledger

    @property
    def plugins(self) -> Any:
        return self.local.plugins

    @property
    def checkpoints(self) -> Any:
        """This host's checkpoint stores (a turn's diff reads the store under this host's
        state root: the one the workers write when they share it)."""
        return self.local.checkpoints

    def describe(self, harness: str) -> Any:
        return self.local.describe(harness)

    def export(self, session_id: str) -> dict[str, Any]:
        return self.local.export(session_id)

    async def open_session(self, **fields: Any) -> SessionRef:
        return await self.remote.open_session(**fields)

    async def resume_session(self, session: SessionRef | str, **_: Any) -> SessionRef:
        """A Temporal session needs no resume: its workflow holds it. The ledger's ref."""
        session_id = session if isinstance(session, str) else session.session_id
        record = self.ledger.get_session(session_id)
        if record is None:
            raise HarnessError("session-not-found")
        if record.status == "closed":
            raise HarnessError("session-closed")
        ref: SessionRef = record.ref
        return ref

    def active_turn(self, session: SessionRef | str) -> RemoteTurn | None:
        session_id = session if isinstance(session, str) else session.session_id
        return self._running.get(session_id)

    @asynccontextmanager
    async def turn(
        self, session: SessionRef | str, prompt: str, *, timeout: float | None = None
    ) -> AsyncIterator[RemoteTurn]:
        """The turn once its ``turn.started`` is in the ledger (``turn.events[0]``)."""
        if timeout is not None:
            raise HarnessError("unsupported-feature", "a turn timeout on --temporal (use none)")
        session_id = session if isinstance(session, str) else session.session_id
        previous = self._settled.get(session_id)
        if previous is not None:
            # the ledger shows the last turn's terminal before its workflow update returns:
            # a turn asked for in between would be refused turn-active
            with anyio.move_on_after(SETTLE_SECONDS):
                await previous.wait()
        settled = self._settled[session_id] = anyio.Event()
        try:
            async with self.remote.turn(session, prompt) as turn:
                self._running[session_id] = turn
                try:
                    async for _ in turn:
                        break  # turn.started is recorded: the caller iterates on from there
                    yield turn
                    with anyio.move_on_after(SETTLE_SECONDS):
                        await turn.result()
                finally:
                    self._running.pop(session_id, None)
        finally:
            settled.set()

    async def cancel_turn(self, session: SessionRef | str, turn_id: str | None = None) -> None:
        session_id = session if isinstance(session, str) else session.session_id
        if session_id not in self._running:
            raise HarnessError("session-not-found")  # serve says: not live in this server
        await self.remote.cancel_turn(session, turn_id)

    async def close_session(self, session: SessionRef | str) -> None:
        await self.remote.close_session(session)

    async def steer(self, session: SessionRef | str, text: str) -> None:
        session_id = session if isinstance(session, str) else session.session_id
        running = self._running.get(session_id)
        if running is None:
            raise HarnessError("turn-not-found", "no turn of this session runs in this server")
        await self.remote.steer(session_id, text, turn_id=running.turn_id)

    async def fork(self, session: SessionRef | str, *, at: str | None = None) -> SessionRef:
        return await self.remote.fork(session, at=at)

    async def checkpoint(self, session: SessionRef | str) -> str:
        return await self.remote.checkpoint(session)

    async def rewind(self, session: SessionRef | str, checkpoint: str) -> SessionRewound:
        return await self.remote.rewind(session, checkpoint)
