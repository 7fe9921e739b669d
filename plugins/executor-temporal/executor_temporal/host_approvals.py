"""A ``TemporalController``'s ``permission_handler``: the host's approver, as on the local one.

While a turn runs, each of its permission requests (``permission.requested`` in the ledger) goes
to the handler as the contract's full ``PermissionRequest`` (the workflow's
``pending_permissions``), and the handler's ``PermissionDecision`` goes back through ``approve``.
A handler answering ``None`` leaves the request to someone else (another host, ``approve`` by
hand); unanswered, the workflow's timer denies it. A handler that fails, or answers with
something that is not a ``PermissionDecision``, denies (never allows by accident).
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio
import anyio.abc
from harness_hookspecs import (
    TERMINAL_TYPES,
    HarnessError,
    LedgerStore,
    PermissionDecision,
    PermissionHandler,
    PermissionRequest,
    SessionRef,
)

from harness_core.approvals import answer_of  # the local seam's own rule
from harness_core.ledger.tail import follow
from harness_core.retry import turn_ended


class TemporalController(Protocol):
    """What answering a turn's requests needs of :class:`~.client.TemporalController` (a
    protocol: the client imports this module, so this one does not import the client)."""

    ledger: LedgerStore

    async def approve(
        self, session: SessionRef | str, request_id: str, decision: PermissionDecision
    ) -> Any: ...

    async def pending_permissions(self, session: SessionRef | str) -> list[PermissionRequest]: ...


#: Seconds a request the ledger shows may take to reach its workflow (the worker records
#: ``permission.requested`` a moment before the workflow holds it).
ASKED_GRACE = 2.0


class TurnApprovers:
    """The background tasks answering running turns' requests with ``handler``: a controller
    holds one inside its ``async with`` (a turn's own body must not run in a task group: one
    would wrap the turn's errors in an ``ExceptionGroup``)."""

    def __init__(self, handler: PermissionHandler) -> None:
        self.handler = handler
        self._group: anyio.abc.TaskGroup | None = None

    async def start(self) -> TurnApprovers:
        """Enter the task group (in the task that will :meth:`stop` it)."""
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def stop(self) -> None:
        """Stop answering: cancel every watch and leave the task group."""
        if self._group is not None:
            self._group.cancel_scope.cancel()
            await self._group.__aexit__(None, None, None)
            self._group = None

    async def watch(
        self, controller: TemporalController, session_id: str, turn_id: str, after: int
    ) -> anyio.CancelScope:
        """Answer the turn's requests until it ends or the returned scope is cancelled."""
        assert self._group is not None, "inside `async with` only"
        scope: anyio.CancelScope = await self._group.start(
            self._watch, controller, session_id, turn_id, after
        )
        return scope

    async def _watch(
        self,
        controller: TemporalController,
        session_id: str,
        turn_id: str,
        after: int,
        *,
        task_status: Any,
    ) -> None:
        with anyio.CancelScope() as scope:
            task_status.started(scope)
            try:
                await answer_turn_requests(controller, self.handler, session_id, turn_id, after)
            except HarnessError:
                pass  # the ledger failed: unanswered requests end at the approval timeout


async def answer_turn_requests(
    controller: TemporalController,
    handler: PermissionHandler,
    session_id: str,
    turn_id: str,
    after: int,
) -> None:
    """Answer the turn's requests with ``handler`` until the turn ends."""
    async with anyio.create_task_group() as group:
        async for event in follow(controller.ledger, session_id, after=after):
            if event.turn_id != turn_id:
                continue
            if event.type == "permission.requested":
                request_id = event.payload.request_id  # type: ignore[union-attr]
                group.start_soon(_answer, controller, handler, session_id, request_id)
            elif event.type in TERMINAL_TYPES and turn_ended([event]):
                break
        group.cancel_scope.cancel()  # the turn ended: nobody waits for those answers


async def _answer(
    controller: TemporalController, handler: PermissionHandler, session_id: str, request_id: str
) -> None:
    try:
        request = await _held(controller, session_id, request_id)
        if request is None:
            return  # answered, timed out or ended meanwhile
        decision = await answer_of(lambda: handler(request))
        if decision is not None:
            await controller.approve(session_id, request_id, decision)
    except HarnessError:
        pass  # answered elsewhere, timed out or closed meanwhile


async def _held(
    controller: TemporalController, session_id: str, request_id: str
) -> PermissionRequest | None:
    deadline = anyio.current_time() + ASKED_GRACE
    while True:
        for request in await controller.pending_permissions(session_id):
            if request.request_id == request_id:
                return request
        if anyio.current_time() > deadline:
            return None
        await anyio.sleep(0.02)
