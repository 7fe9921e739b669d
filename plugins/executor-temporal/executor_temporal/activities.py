"""The worker side: activities that run sessions through a worker-local ``Controller``.

Every worker opens the shared ledger (PostgreSQL) once and keeps one ``Controller`` per session
it is attached to. Before writing, an activity claims the session's writer epoch (stores that
fence stale writers: PostgreSQL), so a worker presumed dead cannot append after the takeover. A
session attached here stays attached between turns while nobody else wrote to it; when another
worker ran a turn in between (the ledger moved on), the stale attachment is dropped and the
session resumed, after restoring the adapter's ``state_dir`` from the shared directory.

``run_turn`` heartbeats the last sequence it recorded from a background task; when Temporal
cancels the activity (the workflow's cancel signal), it cancels the turn through
``controller.cancel_turn`` and returns the ``cancelled`` summary. It returns only a summary:
the events are in the ledger. A retry after a worker loss runs the same turn id as the next
attempt (``turn.restarted``): its resume names the turn it retries, so crash recovery keeps the
lost attempt open for it and the turn ends once; if the lost attempt had already ended the turn,
its result stands.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from attrs import define
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError, LedgerStore
from temporalio import activity
from temporalio.exceptions import ApplicationError

from harness_core.context import default_state_root, state_dir_for
from harness_core.controller import Controller
from harness_core.ledger import flush_async, open_ledger
from harness_core.plugin_manager import Plugins, get_plugins
from harness_core.redaction import Redactor
from harness_core.retry import turn_ended

from .approvals import LOCAL_TIMEOUT_GRACE, WorkflowApprover
from .shapes import (
    CLOSE_SESSION,
    NON_RETRYABLE,
    OPEN_SESSION,
    RUN_TURN,
    SessionRefShape,
    SessionSpec,
    SessionStart,
    TurnSummary,
    TurnWork,
)
from .statesync import SharedStateDir

#: Seconds between heartbeats (the worker's throttle sends at most one per 0.5 s anyway).
HEARTBEAT_EVERY = 0.2


@define
class Attached:
    """A session this worker holds live, and the ledger position it last left it at.

    Its controller lives in a task of its own (a controller's task group must be left by the
    task that entered it; activities run in tasks of their own)."""

    controller: Controller
    release: anyio.Event
    released: anyio.Event
    last_sequence: int = 0


class SessionActivities:
    """Register ``activities()`` on a Temporal worker, inside ``async with`` this object."""

    def __init__(
        self,
        *,
        ledger: LedgerStore | str,
        plugins: Plugins | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        shared_state: str | os.PathLike[str] | None = None,
        env_passthrough: Sequence[str] = (),
    ) -> None:
        self.plugins = plugins if plugins is not None else get_plugins()
        self._owns_ledger = isinstance(ledger, str)
        self.ledger: LedgerStore = (
            open_ledger(ledger, schemes=self.plugins.ledger_schemes)
            if isinstance(ledger, str)
            else ledger
        )
        self.state_root = Path(state_dir) if state_dir is not None else default_state_root()
        self.shared = SharedStateDir(shared_state) if shared_state is not None else None
        self.env_passthrough = tuple(env_passthrough)
        self._attached: dict[str, Attached] = {}
        #: every session's permission requests go to its workflow (the client is the worker's)
        self.approver = WorkflowApprover(self._redactor)
        self._hosts: anyio.abc.TaskGroup | None = None

    def activities(self) -> list[Any]:
        return [self.open_session, self.run_turn, self.close_session]

    async def __aenter__(self) -> SessionActivities:
        self._hosts = anyio.create_task_group()
        await self._hosts.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        with anyio.CancelScope(shield=True):
            for session_id in list(self._attached):
                await self._detach(session_id)
        assert self._hosts is not None
        await self._hosts.__aexit__(None, None, None)
        self._hosts = None
        if self._owns_ledger:
            await flush_async(self.ledger)
            self.ledger.close()

    # -- activities -------------------------------------------------------------------------

    @activity.defn(name=OPEN_SESSION)
    async def open_session(self, start: SessionStart) -> SessionRefShape:
        spec = start.spec
        with _as_application_error():
            await self._claim(start.session_id)
            record = await anyio.to_thread.run_sync(self.ledger.get_session, start.session_id)
            if record is not None:  # an earlier attempt opened it before its worker was lost
                await self._attach(start.session_id, spec)
                return _shape(record.ref)
            attached = await self._new_controller(start.session_id, spec.harness)
            ref = await attached.controller.open_session(
                session_id=start.session_id,
                harness=spec.harness,
                workspace=spec.workspace,
                model=spec.model,
                posture=spec.posture,
                agent=spec.agent,
                user=spec.user,
                config=spec.config,
            )
            await self._settled(attached, ref.session_id, spec.harness)
            return _shape(ref)

    @activity.defn(name=RUN_TURN)
    async def run_turn(self, work: TurnWork) -> TurnSummary:
        attempt = activity.info().attempt
        with _as_application_error():
            await self._claim(work.session_id)
            ended = await anyio.to_thread.run_sync(self._ended, work.session_id, work.turn_id)
            if ended is not None:  # the lost attempt finished the turn: its result stands
                return _summary_from_ledger(work.turn_id, ended, attempt)
            if attempt > 1:  # nobody waits for what the lost attempt asked
                await self.approver.attempt_started(work.session_id, work.turn_id)
            attached = await self._attach(work.session_id, work.spec, retrying=work.turn_id)
            controller = attached.controller
            # the workflow's timer decides an unanswered request; this only bounds the wait
            controller.approvals.timeout = work.approval_timeout + LOCAL_TIMEOUT_GRACE
            last = [0]
            async with controller.turn(
                work.session_id,
                work.prompt,
                turn_id=work.turn_id,
                attempt=attempt,
                timeout=work.turn_timeout,
            ) as turn:
                await _drive(controller, work.session_id, turn, last)
            result = turn.result()
            await self._settled(attached, work.session_id, work.spec.harness)
        usage = None if result.usage is None else _usage_dict(result.usage)
        return TurnSummary(
            turn_id=work.turn_id,
            status=result.status,
            reason=result.reason,
            last_sequence=attached.last_sequence,
            attempt=attempt,
            usage=usage,
        )

    @activity.defn(name=CLOSE_SESSION)
    async def close_session(self, start: SessionStart) -> None:
        with _as_application_error():
            await self._claim(start.session_id)
            record = await anyio.to_thread.run_sync(self.ledger.get_session, start.session_id)
            if record is None or record.status == "closed":
                await self._detach(start.session_id)
                return
            attached = await self._attach(start.session_id, start.spec)
            await attached.controller.close_session(start.session_id)
            await self._detach(start.session_id)

    # -- attachment -------------------------------------------------------------------------

    async def _claim(self, session_id: str) -> None:
        # Temporal decides which worker runs the session now: one it presumes lost is fenced
        # even if it still lives (a store that can take over: PostgreSQL).
        claim = getattr(self.ledger, "take_over", None) or self.ledger.claim
        await anyio.to_thread.run_sync(claim, session_id)

    async def _new_controller(self, session_id: str, harness: str) -> Attached:
        await self._detach(session_id)
        controller = Controller(
            plugins=self.plugins,
            ledger=self.ledger,
            state_dir=self.state_root,
            env_passthrough=self.env_passthrough,
            permission_handler=self.approver,
        )
        attached = Attached(controller, anyio.Event(), anyio.Event())
        if self._hosts is None:
            raise HarnessError("invalid-request", "use the activities inside `async with`")
        await self._hosts.start(self._host, attached)
        self._attached[session_id] = attached
        return attached

    @staticmethod
    async def _host(attached: Attached, *, task_status: Any) -> None:
        try:
            async with attached.controller:
                task_status.started()
                await attached.release.wait()
        finally:
            attached.released.set()

    async def _attach(
        self, session_id: str, spec: SessionSpec, *, retrying: str | None = None
    ) -> Attached:
        """This worker's live session, resumed afresh when the ledger moved on without it
        (``retrying``: the turn it runs next, kept open if a lost worker left it so)."""
        last = await anyio.to_thread.run_sync(self.ledger.last_sequence, session_id)
        attached = self._attached.get(session_id)
        if attached is not None and attached.last_sequence == last:
            return attached
        attached = await self._new_controller(session_id, spec.harness)
        if self.shared is not None:
            local = state_dir_for(self.state_root, spec.harness, session_id)
            await anyio.to_thread.run_sync(self.shared.restore, local, spec.harness, session_id)
        fields: dict[str, Any] = {"config": spec.config, "posture": spec.posture}
        for key in ("workspace", "model", "agent", "user"):
            if getattr(spec, key) is not None:
                fields[key] = getattr(spec, key)
        await attached.controller.resume_session(session_id, retrying=retrying, **fields)
        return attached

    async def _settled(self, attached: Attached, session_id: str, harness: str) -> None:
        """Remember where this worker left the session; publish its state_dir."""
        attached.last_sequence = await anyio.to_thread.run_sync(
            self.ledger.last_sequence, session_id
        )
        if self.shared is not None:
            local = state_dir_for(self.state_root, harness, session_id)
            await anyio.to_thread.run_sync(
                self.shared.publish, local, harness, session_id, attached.last_sequence
            )

    async def _detach(self, session_id: str) -> None:
        attached = self._attached.pop(session_id, None)
        if attached is not None:
            with anyio.CancelScope(shield=True):
                attached.release.set()
                await attached.released.wait()

    def _redactor(self, session_id: str) -> Redactor | None:
        """The live session's redactor (its resolved credentials), for what leaves the worker."""
        attached = self._attached.get(session_id)
        if attached is None:
            return None
        try:
            return attached.controller.redactor(session_id)
        except HarnessError:
            return None

    def _ended(self, session_id: str, turn_id: str) -> list[Event] | None:
        earlier = [e for e in self.ledger.events(session_id) if e.turn_id == turn_id]
        return earlier if turn_ended(earlier) else None


async def _drive(controller: Controller, session_id: str, turn: Any, last: list[int]) -> None:
    """Pull the turn to its end, heartbeating; a Temporal cancel becomes ``cancel_turn``."""
    finished = anyio.Event()

    async def pump() -> None:
        async for event in turn:
            last[0] = event.sequence
        finished.set()

    async def heartbeat() -> None:
        while True:
            activity.heartbeat(last[0])
            await anyio.sleep(HEARTBEAT_EVERY)

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        group.start_soon(heartbeat)
        try:
            await finished.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                try:
                    await controller.cancel_turn(session_id, turn.turn_id)
                except HarnessError:
                    pass  # it ended meanwhile
                await finished.wait()
        group.cancel_scope.cancel()


@contextmanager
def _as_application_error() -> Iterator[None]:
    """A ``HarnessError`` leaves the activity as an ``ApplicationError`` typed by its reason;
    the deterministic reasons are non-retryable (another attempt would fail the same way)."""
    try:
        yield
    except HarnessError as error:
        raise ApplicationError(
            error.reason, type=error.reason, non_retryable=error.reason in NON_RETRYABLE
        ) from None


def _shape(ref: Any) -> SessionRefShape:
    return SessionRefShape(provider=ref.provider, target=ref.target, session_id=ref.session_id)


def _usage_dict(usage: Any) -> dict[str, Any]:
    return {k: v for k, v in attrs.asdict(usage).items() if v is not None}


def _summary_from_ledger(turn_id: str, events: list[Event], attempt: int) -> TurnSummary:
    terminal = next(e for e in reversed(events) if e.type in TERMINAL_TYPES)
    status = terminal.type.split(".", 1)[1]
    return TurnSummary(
        turn_id=turn_id,
        status=status,
        reason=getattr(terminal.payload, "reason", None),
        last_sequence=terminal.sequence,
        attempt=attempt,
    )
