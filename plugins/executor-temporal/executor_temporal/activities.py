"""The worker side: activities that run sessions through a worker-local ``Controller``.

Every worker opens the shared ledger (PostgreSQL) once and keeps one ``Controller`` per session
it is attached to. Before writing, an activity claims the session's writer epoch (stores that
fence stale writers: PostgreSQL), so a worker presumed dead cannot append after the takeover. A
session attached here stays attached between turns while nobody else wrote to it; when another
worker ran a turn in between (the ledger moved on), the stale attachment is dropped and the
session resumed, after restoring the adapter's ``state_dir`` from the shared directory.

A turn runs in a task of the worker's own (:class:`Running`), started by one of two
activities. ``start_turn`` is a **local activity**, run inside the workflow task that accepted
the turn, when this worker holds the session as the ledger has it: it starts the turn and waits
up to ``ExecutorOptions.local_start`` for its end, so a short turn costs no activity dispatch
and one workflow task less. A turn still running then is followed by the ``run_turn`` activity
the workflow schedules next on ``own_queue``, the task queue only this worker polls (without
one, ``start_turn`` starts nothing); ``run_turn`` starts the turn itself when nothing runs it
here (a resume, a retry on another worker, a streamed turn, a follow-up its worker lost). It
heartbeats the last sequence the turn recorded; when Temporal cancels the activity (the
workflow's cancel signal), it cancels the turn through ``controller.cancel_turn`` and returns
the ``cancelled`` summary. A worker lost during the window loses its workflow task: Temporal
runs that task again on another worker (after the workflow task timeout), whose ``run_turn``
finds the turn open in the ledger and runs it as the next attempt.

Draining (``drain()``, on the worker's SIGTERM): a running turn gets up to ``grace`` seconds to
finish here. One still running then is **handed over**: a ``status`` event says the worker
stopped, the session is abandoned in the ledger (nothing more of it is written here: no
terminal, no ``by: host``), the turn's processes are stopped, and the activity fails with the
retryable ``worker-stopped``, so Temporal runs the next attempt on another worker at once
(``turn.restarted``), as after a worker loss but without waiting for the heartbeat timeout. A
turn ``start_turn`` started that no ``run_turn`` follows is drained the same way before the
worker releases its sessions. Activities return only a summary: the events are in the ledger. A retry after a worker loss runs the same turn id as the next
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
    DEFAULT_MAX_CONCURRENT,
    FORK_SESSION,
    NON_RETRYABLE,
    OPEN_SESSION,
    REWIND,
    RUN_TURN,
    START_TURN,
    ForkWork,
    RewindSummary,
    RewindWork,
    SessionRefShape,
    SessionSpec,
    SessionStart,
    TurnStart,
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


@define
class Running:
    """A turn running in a task of this worker's own (it outlives the ``start_turn`` local
    activity that started it; the ``run_turn`` activity that follows it collects its end)."""

    session_id: str
    attached: Attached
    attempt: int
    finished: anyio.Event = attrs.Factory(anyio.Event)
    #: the last sequence the turn recorded (heartbeats carry it)
    last: int = 0
    #: handed over (the worker drains): nothing more of it is written here
    handed: bool = False
    result: Any = None
    error: Exception | None = None


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
        self._running: dict[str, Running] = {}  # turn id -> its turn running here
        #: turns this worker runs at once (``build_worker`` sets it): ``start_turn`` starts
        #: none beyond it
        self.max_concurrent = DEFAULT_MAX_CONCURRENT
        #: the task queue only this worker polls for ``run_turn`` (``build_worker`` sets it):
        #: the turns ``start_turn`` leaves running here are followed there; without one it
        #: starts none
        self.own_queue: str | None = None
        #: every session's permission requests go to its workflow (the client is the worker's)
        self.approver = WorkflowApprover(self._redactor)
        self._hosts: anyio.abc.TaskGroup | None = None

    def activities(self) -> list[Any]:
        return [
            self.open_session,
            self.start_turn,
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

    async def collected(self, timeout: float) -> None:
        """Wait until every turn running here was collected by its ``run_turn`` (it ended or
        was handed over), at most ``timeout`` seconds: a draining worker polls its own queue
        until then, so the turns ``start_turn`` began here are still followed here."""
        with anyio.move_on_after(timeout):
            while self._running:
                await anyio.sleep(0.05)

    async def __aenter__(self) -> SessionActivities:
        self._stopping = anyio.Event()
        self._hosts = anyio.create_task_group()
        await self._hosts.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        with anyio.CancelScope(shield=True):
            if self._running:  # started by start_turn, nobody follows them: drain them
                self.drain()
                for run in list(self._running.values()):
                    await run.finished.wait()
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

    @activity.defn(name=START_TURN)
    async def start_turn(self, work: TurnWork) -> TurnStart:
        """A local activity (inside the workflow task that accepted the turn): start the turn
        if this worker holds the session as the ledger has it, and wait up to
        ``work.local_start`` seconds for its end. Else start nothing (``run_turn`` does)."""
        if self.own_queue is None or self.draining or self.monitor.turns >= self.max_concurrent:
            return TurnStart()
        with _as_application_error():
            began = time.monotonic()
            now_at = await self._claim_at(work.session_id)
            attached = self._current(work.session_id, now_at)
            if attached is None or work.turn_id in attached.turn_ids:
                return TurnStart()  # a resume or a retry: the run_turn activity's work
            self.monitor.ledger_seconds.observe(time.monotonic() - began)
            run = await self._start(work, attached, attempt=1)
        with anyio.move_on_after(work.local_start):
            await run.finished.wait()
        if not run.finished.is_set():
            return TurnStart(running=True, queue=self.own_queue)
        return TurnStart(summary=await self._collect(work, run))

    @activity.defn(name=RUN_TURN)
    async def run_turn(self, work: TurnWork) -> TurnSummary:
        """Follow the turn ``start_turn`` left running here, or run it (after a resume, as
        a retry on another worker, or when the session's options start no turn locally)."""
        info = activity.info()
        run = self._running.get(work.turn_id)
        if run is None:
            started = await self._start_here(work, info.attempt, info.heartbeat_details)
            if isinstance(started, TurnSummary):
                return started
            run = started
        return await self._collect(work, run, follow=True)

    async def _start_here(
        self, work: TurnWork, attempt: int, details: Sequence[Any]
    ) -> Running | TurnSummary:
        with _as_application_error():
            began = time.monotonic()
            now_at = await self._claim_at(work.session_id)
            attached = self._current(work.session_id, now_at)
            # The session's events are read only when this worker does not hold the session
            # as the ledger has it, or the turn id is one it saw: a retry, or a client sending
            # an ended turn's id again (its result stands).
            seen = None
            if attached is None or attempt > 1 or work.turn_id in attached.turn_ids:
                ended, seen, tried = await anyio.to_thread.run_sync(
                    self._turns, work.session_id, work.turn_id
                )
                if ended is not None:  # the lost attempt finished the turn: its result stands
                    self.monitor.ledger_seconds.observe(time.monotonic() - began)
                    return _summary_from_ledger(work.turn_id, ended, attempt)
                # started by a start_turn on a worker that lost it: this is the next attempt
                attempt = max(attempt, tried + 1)
            self.monitor.ledger_seconds.observe(time.monotonic() - began)
            if attempt > 1:
                handed = WORKER_STOPPED in map(str, details) or work.after == WORKER_STOPPED
                reason = WORKER_STOPPED if handed else None
                self.monitor.failovers.inc()
                note("turn.failover", reason=reason or WORKER_LOST, session_id=work.session_id,
                     turn_id=work.turn_id, attempt=attempt)  # fmt: skip
                # nobody waits for what the lost attempt asked
                await self.approver.attempt_started(work.session_id, work.turn_id)
            if attached is None:
                attached = await self._attach(
                    work.session_id, work.spec, retrying=work.turn_id, turn_ids=seen
                )
            return await self._start(work, attached, attempt)

    async def _start(self, work: TurnWork, attached: Attached, attempt: int) -> Running:
        """Start the turn in a task of this worker's own (it outlives ``start_turn``); a
        refusal before it started is raised here."""
        note("turn.attempt", session_id=work.session_id, turn_id=work.turn_id, attempt=attempt)
        attached.turn_ids.add(work.turn_id)
        self._forget_ended(work.session_id)
        run = Running(work.session_id, attached, attempt)
        assert self._hosts is not None
        self.monitor.turn_started()
        self._running[work.turn_id] = run
        try:
            await self._hosts.start(self._turn_task, work, run)
        except BaseException:
            self._running.pop(work.turn_id, None)
            self.monitor.turn_ended()
            self.monitor.attempts.labels(outcome="failed").inc()
            raise
        return run

    def _forget_ended(self, session_id: str) -> None:
        """Drop the session's turns that ended here with nobody collecting them (started by
        ``start_turn``, their ``run_turn`` went to another worker, which took the session)."""
        for turn_id, run in list(self._running.items()):
            if run.session_id == session_id and run.finished.is_set():
                del self._running[turn_id]
                self.monitor.turn_ended()
                self.monitor.attempts.labels(outcome="failed").inc()

    async def _turn_task(self, work: TurnWork, run: Running, *, task_status: Any) -> None:
        """Runs the turn to its end; when the worker drains and the turn runs on past the
        grace, hands it over (see the module doc)."""
        controller = run.attached.controller
        # the workflow's timer decides an unanswered request; this only bounds the wait
        controller.approvals.timeout = work.approval_timeout + LOCAL_TIMEOUT_GRACE
        running = controller.turn(work.session_id, work.prompt, turn_id=work.turn_id,
                                  attempt=run.attempt, timeout=work.turn_timeout)  # fmt: skip
        steers = relaying_steers(self.approver.client, controller, work.session_id, work.turn_id)
        started = False
        try:
            async with running as turn, steers:
                task_status.started()
                started = True
                assert self._stopping is not None
                await _drive(controller, work.session_id, turn, run, self._stopping, self.grace,
                             self.ledger)  # fmt: skip
            run.result = turn.result()
        except Exception as error:
            if not started:
                raise  # a refusal: start() raises it
            run.error = error  # the activity that collects the turn raises it
        finally:
            run.finished.set()

    async def _collect(self, work: TurnWork, run: Running, *, follow: bool = False) -> TurnSummary:
        """The turn's summary once it ended; ``follow`` (the ``run_turn`` activity): heartbeat
        meanwhile and turn Temporal's cancel into ``cancel_turn``."""
        fields: dict[str, Any] = {
            "session_id": work.session_id,
            "turn_id": work.turn_id,
            "attempt": run.attempt,
        }
        controller = run.attached.controller
        outcome = "failed"
        owned = False
        try:
            if follow:
                await _follow(controller, work, run)
            owned = self._running.get(work.turn_id) is run  # (and not dropped as uncollected)
            if owned:
                del self._running[work.turn_id]
            with _as_application_error():
                if run.handed:
                    await self._detach(work.session_id)
                    if follow:  # (``start_turn``, a local activity, has no heartbeats)
                        activity.heartbeat(run.last, WORKER_STOPPED)
                        await anyio.sleep(HEARTBEAT_SETTLE)
                    raise HandedOver
                if run.error is not None:
                    raise run.error
                began = time.monotonic()
                await self._settled(run.attached, work.session_id, work.spec.harness)
                self.monitor.ledger_seconds.observe(time.monotonic() - began)
            result = run.result
            outcome = result.status
            note("turn.finished", status=result.status, reason=result.reason, **fields)
        except HandedOver:
            outcome = "handed-over"
            self.monitor.handovers.inc()
            note("turn.handover", reason=WORKER_STOPPED, grace=self.grace, **fields)
            raise ApplicationError(WORKER_STOPPED, type=WORKER_STOPPED) from None
        finally:
            if owned:
                self.monitor.turn_ended()
                self.monitor.attempts.labels(outcome=outcome).inc()
        usage = None if result.usage is None else _usage_dict(result.usage)
        return TurnSummary(
            turn_id=work.turn_id,
            status=result.status,
            reason=result.reason,
            last_sequence=run.attached.last_sequence,
            attempt=run.attempt,
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
        self._forget_ended(session_id)
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

    def _turns(
        self, session_id: str, turn_id: str | None
    ) -> tuple[list[Event] | None, set[str], int]:
        """One read of the session: the events of ``turn_id`` if it ended, every turn id, and
        the attempts of ``turn_id`` the ledger holds."""
        events = self.ledger.events(session_id)
        earlier = [e for e in events if e.turn_id == turn_id] if turn_id is not None else []
        seen = {e.turn_id for e in events if e.turn_id is not None}
        tried = max([0] + [getattr(e.payload, "attempt", 1) for e in earlier
                           if e.type in ("turn.started", "turn.restarted")])  # fmt: skip
        return (earlier if turn_ended(earlier) else None), seen, tried


async def _drive(
    controller: Controller,
    session_id: str,
    turn: Any,
    run: Running,
    stopping: anyio.Event,
    grace: float,
    ledger: LedgerStore,
) -> None:
    """Pull the turn to its end, noting its last sequence in ``run``. When the worker drains
    (``stopping``) and the turn runs on past ``grace``: hand it over (see the module doc) and
    set ``run.handed``."""
    pumped = anyio.Event()

    async def pump() -> None:
        try:
            async for event in turn:
                run.last = event.sequence
        except HarnessError:
            if not run.handed:  # once abandoned, the ledger refuses the turn's end: expected
                raise
        finally:
            pumped.set()

    async def hand_over() -> None:
        await stopping.wait()
        with anyio.move_on_after(grace):
            await pumped.wait()
            return
        with anyio.CancelScope(shield=True):
            if turn.record_side_event(Status(message=HANDOVER_STATUS)):
                await flush_async(ledger)
            run.handed = True
            abandon = getattr(ledger, "abandon", None)
            if abandon is not None:  # what the turn writes from now on is refused
                await anyio.to_thread.run_sync(abandon, session_id)
            try:
                await controller.cancel_turn(session_id, turn.turn_id)
            except HarnessError:
                pass  # it ended meanwhile
            await pumped.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(hand_over)
        await pump()
        group.cancel_scope.cancel()


async def _follow(controller: Controller, work: TurnWork, run: Running) -> None:
    """Wait for the turn's end, heartbeating its last sequence; a Temporal cancel (or one
    the host asked before this activity was scheduled) becomes ``cancel_turn``."""

    async def heartbeat() -> None:
        # The first one after HEARTBEAT_EVERY, not at once: a turn shorter than that costs
        # the service no heartbeat (the heartbeat timeout counts from the start anyway; a
        # cancel reaches the activity with the first heartbeat's answer).
        while True:
            await anyio.sleep(HEARTBEAT_EVERY)
            activity.heartbeat(run.last)

    async def cancel() -> None:
        with anyio.CancelScope(shield=True):
            try:
                await controller.cancel_turn(work.session_id, work.turn_id)
            except HarnessError:
                pass  # it ended meanwhile
            await run.finished.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(heartbeat)
        try:
            if work.cancel:
                await cancel()
            await run.finished.wait()
        except anyio.get_cancelled_exc_class():
            await cancel()
        group.cancel_scope.cancel()


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
