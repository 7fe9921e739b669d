"""The worker side: activities that run sessions through a worker-local ``Controller``.

Every worker opens the shared ledger (PostgreSQL) once and keeps one ``Controller`` per session
it is attached to. Before writing, an activity claims the session's writer epoch (stores that
fence stale writers: PostgreSQL), so a worker presumed dead cannot append after the takeover. A
session attached here stays attached between turns while nobody else wrote to it; when another
worker ran a turn in between (the ledger moved on), the stale attachment is dropped and the
session resumed, after restoring the adapter's ``state_dir`` from the shared directory.

``run_turn`` heartbeats the last sequence it recorded from a background task; when Temporal
cancels the activity (the workflow's cancel signal), it cancels the turn through
``controller.cancel_turn`` and returns the ``cancelled`` summary.

Draining (``drain()``, on the worker's SIGTERM): a running turn gets up to ``grace`` seconds to
finish here. One still running then is **handed over**: a ``status`` event says the worker
stopped, the session is abandoned in the ledger (nothing more of it is written here: no
terminal, no ``by: host``), the turn's processes are stopped, and the activity fails with the
retryable ``worker-stopped``, so Temporal runs the next attempt on another worker at once
(``turn.restarted``), as after a worker loss but without waiting for the heartbeat timeout. It returns only a summary:
the events are in the ledger. A retry after a worker loss runs the same turn id as the next
attempt (``turn.restarted``): its resume names the turn it retries, so crash recovery keeps the
lost attempt open for it and the turn ends once; if the lost attempt had already ended the turn,
its result stands.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs
from attrs import define
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError, LedgerStore, Status
from temporalio import activity
from temporalio.exceptions import ApplicationError

from harness_core.checkpoints import CheckpointSettings
from harness_core.context import default_state_root, state_dir_for
from harness_core.controller import Controller
from harness_core.ledger import flush_async, open_ledger
from harness_core.plugin_manager import Plugins, get_plugins
from harness_core.redaction import Redactor
from harness_core.retry import turn_ended

from .approvals import LOCAL_TIMEOUT_GRACE, WorkflowApprover
from .observability import Monitor, note
from .shapes import (
    CHECKPOINT,
    CLOSE_SESSION,
    DEFAULT_GRACE,
    FORK_SESSION,
    NON_RETRYABLE,
    OPEN_SESSION,
    REWIND,
    RUN_TURN,
    ForkWork,
    RewindSummary,
    RewindWork,
    SessionRefShape,
    SessionSpec,
    SessionStart,
    TurnSummary,
    TurnWork,
)
from .statesync import SharedStateDir
from .steering import relaying_steers

#: Seconds between heartbeats (the worker's throttle sends at most one per 0.5 s anyway).
HEARTBEAT_EVERY = 0.2
#: The reason a handed-over attempt fails with (retryable), and leaves in its last heartbeat.
WORKER_STOPPED = "worker-stopped"
#: What the next attempt of a turn whose worker vanished (no handover) calls it.
WORKER_LOST = "worker-lost"
#: Seconds to wait after the handover heartbeat (the heartbeat throttle is 0.5 s) so that
#: Temporal has it before the attempt fails: the next attempt reads its reason there.
HEARTBEAT_SETTLE = 0.7


class HandedOver(Exception):
    """The turn was handed over (the worker drains): the activity fails, retryable."""


@define
class Attached:
    """A session this worker holds live, and the ledger position it last left it at.

    Its controller lives in a task of its own (a controller's task group must be left by the
    task that entered it; activities run in tasks of their own)."""

    controller: Controller
    release: anyio.Event
    released: anyio.Event
    last_sequence: int = 0
    #: the ids of the session's turns in the ledger as this worker knows it
    turn_ids: set[str] = attrs.Factory(set)


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
        grace: float = DEFAULT_GRACE,
        monitor: Monitor | None = None,
        checkpoints: CheckpointSettings | bool = False,
    ) -> None:
        """``grace``: seconds running turns get to finish once the worker drains;
        ``monitor``: the worker's metrics (a fresh one when not given); ``checkpoints``: the
        workspace snapshots around each turn (``Controller(checkpoints=...)``; a checkpoint
        store lives in this worker's ``state_dir``)."""
        self.checkpoints = checkpoints
        self.plugins = plugins if plugins is not None else get_plugins()
        self.grace = grace
        self.monitor = monitor if monitor is not None else Monitor()
        self._stopping: anyio.Event | None = None
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
        return [
            self.open_session,
            self.run_turn,
            self.close_session,
            self.fork_session,
            self.checkpoint,
            self.rewind,
        ]

    def drain(self) -> None:
        """Take no new turn; running ones get ``grace`` seconds, then are handed over."""
        if self._stopping is not None:
            self._stopping.set()

    @property
    def draining(self) -> bool:
        return self._stopping is not None and self._stopping.is_set()

    async def __aenter__(self) -> SessionActivities:
        self._stopping = anyio.Event()
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
            self.monitor.attaches.labels(how="opened").inc()
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
        info = activity.info()
        attempt = info.attempt
        fields: dict[str, Any] = {
            "session_id": work.session_id,
            "turn_id": work.turn_id,
            "attempt": attempt,
        }
        if attempt > 1:
            reason = WORKER_STOPPED if WORKER_STOPPED in map(str, info.heartbeat_details) else None
            self.monitor.failovers.inc()
            note("turn.failover", reason=reason or WORKER_LOST, **fields)
        note("turn.attempt", **fields)
        self.monitor.turn_started()
        outcome = "failed"
        try:
            summary = await self._run_turn(work, attempt)
            outcome = summary.status
            note("turn.finished", status=summary.status, reason=summary.reason, **fields)
            return summary
        except HandedOver:
            outcome = "handed-over"
            self.monitor.handovers.inc()
            note("turn.handover", reason=WORKER_STOPPED, grace=self.grace, **fields)
            raise ApplicationError(WORKER_STOPPED, type=WORKER_STOPPED) from None
        finally:
            self.monitor.turn_ended()
            self.monitor.attempts.labels(outcome=outcome).inc()

    async def _run_turn(self, work: TurnWork, attempt: int) -> TurnSummary:
        with _as_application_error():
            began = time.monotonic()
            now_at = await self._claim_at(work.session_id)
            attached = self._current(work.session_id, now_at)
            # The session's events are read only when this worker does not hold the session
            # as the ledger has it, or the turn id is one it saw: a retry, or a client sending
            # an ended turn's id again (its result stands).
            seen = None
            if attached is None or attempt > 1 or work.turn_id in attached.turn_ids:
                ended, seen = await anyio.to_thread.run_sync(
                    self._turns, work.session_id, work.turn_id
                )
                if ended is not None:  # the lost attempt finished the turn: its result stands
                    self.monitor.ledger_seconds.observe(time.monotonic() - began)
                    return _summary_from_ledger(work.turn_id, ended, attempt)
            self.monitor.ledger_seconds.observe(time.monotonic() - began)
            if attempt > 1:  # nobody waits for what the lost attempt asked
                await self.approver.attempt_started(work.session_id, work.turn_id)
            if attached is None:
                attached = await self._attach(
                    work.session_id, work.spec, retrying=work.turn_id, turn_ids=seen
                )
            attached.turn_ids.add(work.turn_id)
            controller = attached.controller
            # the workflow's timer decides an unanswered request; this only bounds the wait
            controller.approvals.timeout = work.approval_timeout + LOCAL_TIMEOUT_GRACE
            last = [0]
            assert self._stopping is not None
            running = controller.turn(
                work.session_id,
                work.prompt,
                turn_id=work.turn_id,
                attempt=attempt,
                timeout=work.turn_timeout,
            )
            steers = relaying_steers(
                self.approver.client, controller, work.session_id, work.turn_id
            )
            async with running as turn, steers:
                handed = await _drive(controller, work.session_id, turn, last, self._stopping,
                                      self.grace, self.ledger)  # fmt: skip
            if handed:
                await self._detach(work.session_id)
                activity.heartbeat(last[0], WORKER_STOPPED)
                await anyio.sleep(HEARTBEAT_SETTLE)
                raise HandedOver
            result = turn.result()
            began = time.monotonic()
            await self._settled(attached, work.session_id, work.spec.harness)
            self.monitor.ledger_seconds.observe(time.monotonic() - began)
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

    # -- branching: the workflow runs these while no turn of the session runs ----------------

    @activity.defn(name=FORK_SESSION)
    async def fork_session(self, work: ForkWork) -> SessionRefShape:
        """Fork the parent in a controller of the child's own: the child stays attached here;
        the parent's attachment (here or elsewhere) is stale now and resumes at its next turn."""
        parent, request = work.parent, work.request
        with _as_application_error():
            last = await self._claim_at(parent.session_id)
            child = await anyio.to_thread.run_sync(self.ledger.get_session, request.child_id)
            if child is not None:  # an earlier attempt forked before its worker was lost
                if child.ref.harness != parent.spec.harness:
                    raise HarnessError("invalid-request", "the child id names another session")
                return _shape(child.ref)
            held = self._attached.get(parent.session_id)
            if held is None or held.last_sequence != last:  # the parent ran elsewhere last
                await self._restore_state(parent.session_id, parent.spec.harness)
            attached = await self._new_controller(request.child_id, parent.spec.harness)
            ref = await attached.controller.fork(
                parent.session_id, at=request.at, session_id=request.child_id, **request.fields
            )
            await self._settled(attached, ref.session_id, parent.spec.harness)
            return _shape(ref)

    @activity.defn(name=CHECKPOINT)
    async def checkpoint(self, start: SessionStart) -> str:
        with _as_application_error():
            await self._claim(start.session_id)
            attached = await self._attach(start.session_id, start.spec)
            checkpoint_id = await attached.controller.checkpoint(start.session_id)
            await self._settled(attached, start.session_id, start.spec.harness)
            return checkpoint_id

    @activity.defn(name=REWIND)
    async def rewind(self, work: RewindWork) -> RewindSummary:
        start = work.session
        with _as_application_error():
            await self._claim(start.session_id)
            attached = await self._attach(start.session_id, start.spec)
            rewound = await attached.controller.rewind(start.session_id, work.checkpoint)
            await self._settled(attached, start.session_id, start.spec.harness)
            return RewindSummary(
                checkpoint_id=rewound.checkpoint_id,
                conversation=rewound.conversation,
                turns_kept=rewound.turns_kept,
                turn_id=rewound.turn_id,
            )

    # -- attachment -------------------------------------------------------------------------

    async def _claim(self, session_id: str) -> int | None:
        """Claim the session; its last sequence in the ledger now when the store tells it."""
        # Temporal decides which worker runs the session now: one it presumes lost is fenced
        # even if it still lives (a store that can take over: PostgreSQL, which tells the last
        # sequence with the claim, in the same read).
        take_over_at = getattr(self.ledger, "take_over_at", None)
        if take_over_at is not None:
            _, last = await anyio.to_thread.run_sync(take_over_at, session_id)
            return int(last)
        claim = getattr(self.ledger, "take_over", None) or self.ledger.claim
        await anyio.to_thread.run_sync(claim, session_id)
        return None

    async def _claim_at(self, session_id: str) -> int:
        """Claim the session; its last sequence in the ledger now."""
        last = await self._claim(session_id)
        if last is None:
            last = await anyio.to_thread.run_sync(self.ledger.last_sequence, session_id)
        return last

    async def _new_controller(self, session_id: str, harness: str) -> Attached:
        await self._detach(session_id)
        controller = Controller(
            plugins=self.plugins,
            ledger=self.ledger,
            state_dir=self.state_root,
            env_passthrough=self.env_passthrough,
            permission_handler=self.approver,
            checkpoints=self.checkpoints,
        )
        attached = Attached(controller, anyio.Event(), anyio.Event())
        if self._hosts is None:
            raise HarnessError("invalid-request", "use the activities inside `async with`")
        await self._hosts.start(self._host, attached, session_id)
        self._attached[session_id] = attached
        return attached

    @staticmethod
    async def _host(attached: Attached, session_id: str, *, task_status: Any) -> None:
        try:
            async with attached.controller:
                task_status.started()
                await attached.release.wait()
        except HarnessError as error:
            # Leaving a session the ledger no longer takes (abandoned in a handover, or the
            # database away): the worker goes on; the next claimer ends what is open.
            note("session.detached", logging.WARNING, session_id=session_id, reason=error.reason)
        finally:
            attached.released.set()

    async def _attach(
        self,
        session_id: str,
        spec: SessionSpec,
        *,
        retrying: str | None = None,
        turn_ids: set[str] | None = None,
    ) -> Attached:
        """This worker's live session, resumed afresh when the ledger moved on without it
        (``retrying``: the turn it runs next, kept open if a lost worker left it so;
        ``turn_ids``: the session's turn ids if just read)."""
        last = await anyio.to_thread.run_sync(self.ledger.last_sequence, session_id)
        attached = self._current(session_id, last)
        if attached is not None:
            return attached
        self.monitor.attaches.labels(how="resumed").inc()
        note("session.attached", session_id=session_id, how="resumed", last_sequence=last)
        attached = await self._new_controller(session_id, spec.harness)
        if turn_ids is None:
            turn_ids = (await anyio.to_thread.run_sync(self._turns, session_id, None))[1]
        attached.turn_ids.update(turn_ids)
        await self._restore_state(session_id, spec.harness)
        fields: dict[str, Any] = {"config": spec.config, "posture": spec.posture}
        for key in ("workspace", "model", "agent", "user"):
            if getattr(spec, key) is not None:
                fields[key] = getattr(spec, key)
        await attached.controller.resume_session(session_id, retrying=retrying, **fields)
        return attached

    async def _restore_state(self, session_id: str, harness: str) -> None:
        """The adapter's ``state_dir`` as the worker that last ran the session published it."""
        if self.shared is not None:
            local = state_dir_for(self.state_root, harness, session_id)
            await anyio.to_thread.run_sync(self.shared.restore, local, harness, session_id)

    def _current(self, session_id: str, last: int) -> Attached | None:
        """The session as this worker holds it, if nobody wrote to it since (``last``: the
        ledger's last sequence now): its next turn runs there without a resume."""
        attached = self._attached.get(session_id)
        if attached is None or attached.last_sequence != last:
            return None
        return attached

    async def _settled(self, attached: Attached, session_id: str, harness: str) -> None:
        """Remember where this worker left the session; publish its state_dir."""
        await flush_async(self.ledger)
        held_last = getattr(self.ledger, "held_last", None)  # no read where the store knows it
        last: int | None = None if held_last is None else held_last(session_id)
        if last is None:
            last = await anyio.to_thread.run_sync(self.ledger.last_sequence, session_id)
        attached.last_sequence = last
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

    def _turns(self, session_id: str, turn_id: str | None) -> tuple[list[Event] | None, set[str]]:
        """One read of the session: the events of ``turn_id`` if it ended, and every turn id."""
        events = self.ledger.events(session_id)
        earlier = [e for e in events if e.turn_id == turn_id] if turn_id is not None else []
        seen = {e.turn_id for e in events if e.turn_id is not None}
        return (earlier if turn_ended(earlier) else None), seen


async def _drive(
    controller: Controller,
    session_id: str,
    turn: Any,
    last: list[int],
    stopping: anyio.Event,
    grace: float,
    ledger: LedgerStore,
) -> bool:
    """Pull the turn to its end, heartbeating; a Temporal cancel becomes ``cancel_turn``. When
    the worker drains (``stopping``) and the turn runs on past ``grace``: hand it over (see the
    module doc) and return ``True``."""
    finished = anyio.Event()
    handed = False

    async def pump() -> None:
        try:
            async for event in turn:
                last[0] = event.sequence
        except HarnessError:
            if not handed:  # once abandoned, the ledger refuses the turn's end: expected
                raise
        finally:
            finished.set()

    async def heartbeat() -> None:
        # The first one after HEARTBEAT_EVERY, not at once: a turn shorter than that costs
        # the service no heartbeat (the heartbeat timeout counts from the start anyway; a
        # cancel reaches the activity with the first heartbeat's answer).
        while True:
            await anyio.sleep(HEARTBEAT_EVERY)
            activity.heartbeat(last[0])

    async def hand_over() -> None:
        nonlocal handed
        await stopping.wait()
        with anyio.move_on_after(grace):
            await finished.wait()
            return
        with anyio.CancelScope(shield=True):
            if turn.record_side_event(Status(message=HANDOVER_STATUS)):
                await flush_async(ledger)
            handed = True
            abandon = getattr(ledger, "abandon", None)
            if abandon is not None:  # what the turn writes from now on is refused
                await anyio.to_thread.run_sync(abandon, session_id)
            try:
                await controller.cancel_turn(session_id, turn.turn_id)
            except HarnessError:
                pass  # it ended meanwhile
            await finished.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        group.start_soon(heartbeat)
        group.start_soon(hand_over)
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
    return handed


#: The ``status`` event a handed-over attempt ends with (the next attempt's turn.restarted
#: follows): a worker stopped, nobody cancelled.
HANDOVER_STATUS = "worker stopped: the turn continues on another worker"


@contextmanager
def _as_application_error() -> Iterator[None]:
    """A ``HarnessError`` leaves the activity as an ``ApplicationError`` typed by its reason;
    the deterministic reasons are non-retryable (another attempt would fail the same way)."""
    try:
        yield
    except HarnessError as error:
        raise ApplicationError(
            error.hint or error.reason,  # a safe summary by contract (see HarnessError)
            type=error.reason,
            non_retryable=error.reason in NON_RETRYABLE,
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
