"""``SessionWorkflow``: one Temporal workflow per session (workflow id = session id).

Deterministic by construction: no I/O, no clock or randomness outside Temporal's APIs; every
plugin call (open, turn, close) is an activity on some worker, which writes the events to the
shared ledger. History holds only the records of :mod:`.shapes`.

- update ``open``: opens the session (first thing a client does after starting the workflow);
- update ``turn``: runs one turn to its end and returns its summary; the validator refuses a
  closed session or an active turn (the turn id is the client's, so a retry keeps it). A turn
  nobody streams starts as the local activity ``start_turn`` inside the workflow task (see
  ``ExecutorOptions.local_start``); what outlasts it is followed by the ``run_turn`` activity
  on the task queue of the worker running it (``TurnStart.queue``), and on the shared queue
  when that worker is lost; what was not started there is the ``run_turn`` activity;
- signal ``cancel``: cancels the running turn's activity; the worker cancels the turn through
  its controller and the activity returns the ``cancelled`` summary;
- update ``close``: cancels a running turn, closes the session on a worker; idempotent;
- update ``permission_requested`` (from the worker running the turn: the approval seam's host
  handler there, see :mod:`.approvals`) waits for update ``answer_permission`` (from the host;
  its validator refuses unknown ids) or a workflow timer that denies (``source="timeout"``);
  both carry the contract's ``PermissionRequest`` / ``PermissionDecision`` as plain dicts;
- update ``steer`` (host) waits until the worker running the turn took the text through its
  long-polling update ``next_steer`` and says what became of it; refused without a running turn;
- updates ``fork``, ``checkpoint``, ``rewind`` (host) run an activity on a worker while no turn
  runs (turns wait for none of them: a turn asked meanwhile is refused ``session-busy``); a fork
  starts the child's own workflow (its id the child session's), which outlives this one;
- continue-as-new between turns when the history grows.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    import attrs
    from harness_hookspecs import PermissionDecision, PermissionRequest
    from harness_hookspecs.permissions import request_from_dict, request_to_dict

    from .shapes import (
        ANSWER_PERMISSION,
        ATTEMPT_STARTED,
        CHECKPOINT,
        CLOSE_SESSION,
        FORK_SESSION,
        NEXT_STEER,
        NON_RETRYABLE,
        OPEN_SESSION,
        PERMISSION_REQUESTED,
        REWIND,
        RUN_TURN,
        START_TURN,
        STEER,
        ForkRequest,
        ForkWork,
        RewindSummary,
        RewindWork,
        SessionRefShape,
        SessionStart,
        SteerPoll,
        SteerRequest,
        SteerWork,
        TurnRequest,
        TurnStart,
        TurnSummary,
        TurnWork,
    )

#: Short control activities (open / close): a few attempts, then the error stands.
CONTROL_TIMEOUT = timedelta(seconds=120)
CONTROL_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=list(NON_RETRYABLE))
#: A fork, checkpoint or rewind: git over a whole workspace (its own timeouts are shorter).
BRANCH_TIMEOUT = timedelta(seconds=900)
#: The ``workflow.patched`` id of turns that start as a local activity (histories of runs
#: from before it replay without one).
LOCAL_START = "turn-local-start"
#: Bounds ``start_turn``: its own wait is ``local_start``; taking the session up (claim, a
#: resume when another worker ran it last) comes before.
LOCAL_START_TIMEOUT = timedelta(seconds=60)
#: What a fork may change of the parent's spec (the harness stays).
FORK_FIELDS = frozenset({"workspace", "model", "posture", "agent", "user", "config"})


@workflow.defn(name="SessionWorkflow")
class SessionWorkflow:
    @workflow.init
    def __init__(self, start: SessionStart) -> None:
        # the input is here (not only in run) because updates may run before run starts
        self._start = start
        self._ref: SessionRefShape | None = start.ref
        self._opened = start.ref is not None
        self._closing = False
        self._closed = False
        self._turns = start.turns
        self._active: str | None = None
        self._cancel: str | None = None  # the turn id a cancel was asked for
        self._pending: dict[str, PermissionRequest] = {}  # asked, not yet answered
        self._answers: dict[str, PermissionDecision] = {}  # answered, not yet collected
        self._operation: str | None = None  # a fork / checkpoint / rewind runs on a worker
        self._steers: list[tuple[str, str, str]] = []  # (steer id, turn id, text) not yet taken
        self._taken: dict[str, str] = {}  # steer id -> turn id, taken by the worker, not done
        self._steered: dict[str, tuple[str | None, str | None]] = {}  # id -> (reason, hint)
        self._unsteerable: str | None = None  # the running turn's harness has no steer
        self._steer_count = 0

    @workflow.run
    async def run(self, start: SessionStart) -> int:
        await workflow.wait_condition(
            lambda: (
                self._closed
                or (self._active is None and self._operation is None and self._history_is_long())
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        if not self._closed:
            workflow.continue_as_new(
                SessionStart(
                    session_id=start.session_id,
                    spec=start.spec,
                    options=start.options,
                    ref=self._ref,
                    turns=self._turns,
                )
            )
        return self._turns

    def _history_is_long(self) -> bool:
        info = workflow.info()
        ran = self._turns - self._start.turns
        return ran > 0 and (
            ran >= self._start.options.turns_per_run or info.is_continue_as_new_suggested()
        )

    # -- open -------------------------------------------------------------------------------

    @workflow.update(name="open")
    async def open(self) -> SessionRefShape:
        if self._opened and self._ref is not None:
            return self._ref
        try:
            ref: SessionRefShape = await workflow.execute_activity(
                OPEN_SESSION,
                self._start,
                result_type=SessionRefShape,
                start_to_close_timeout=CONTROL_TIMEOUT,
                retry_policy=CONTROL_RETRY,
            )
        except ActivityError as error:
            self._closed = True  # nothing to run or close: the workflow ends
            cause = error.cause
            reason = cause.type if isinstance(cause, ApplicationError) else None
            raise ApplicationError(
                "the session did not open", type=reason or "provider-failed"
            ) from None
        self._ref, self._opened = ref, True
        return ref

    # -- turns ------------------------------------------------------------------------------

    @workflow.update(name="turn")
    async def turn(self, request: TurnRequest) -> TurnSummary:
        self._refuse_turn()  # validators do not run on replay; the handler checks again
        options = self._start.options
        self._active, self._cancel = request.turn_id, None
        work = TurnWork(
            session_id=self._start.session_id,
            spec=self._start.spec,
            turn_id=request.turn_id,
            prompt=request.prompt,
            turn_timeout=options.turn_timeout,
            approval_timeout=options.approval_timeout,
        )
        try:
            if options.local_start > 0 and not request.streamed and workflow.patched(LOCAL_START):
                begun, after = await self._start_locally(work)
                if begun.summary is not None:
                    return begun.summary
                if not begun.running and self._cancel is not None:
                    return TurnSummary(request.turn_id, "cancelled", "host")  # never started
                # A cancel asked meanwhile goes with the activity: cancelling an activity
                # scheduled in this same workflow task would never reach the running turn.
                work = dataclasses.replace(work, cancel=self._cancel is not None, after=after)
                if begun.running and begun.queue is not None:
                    return await self._follow_on(begun.queue, work)
            return await self._run_turn(work)
        finally:
            self._active, self._cancel = None, None
            self._turns += 1
            # a steer an abandoned poll took after the worker's turn had ended never arrived
            for steer_id, turn_id in list(self._taken.items()):
                if turn_id == request.turn_id:
                    del self._taken[steer_id]
                    self._steered[steer_id] = ("turn-not-found", "the turn ended before it took it")

    async def _start_locally(self, work: TurnWork) -> tuple[TurnStart, str | None]:
        """``start_turn`` on this worker, inside this workflow task (see
        ``ExecutorOptions.local_start``); what it did not start, ``run_turn`` runs (after the
        reason ``start_turn`` failed with: ``worker-stopped`` when it handed the turn over)."""
        try:
            begun: TurnStart = await workflow.execute_local_activity(
                START_TURN,
                dataclasses.replace(work, local_start=self._start.options.local_start),
                result_type=TurnStart,
                start_to_close_timeout=LOCAL_START_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as error:
            _raise_refusal(error)
            cause = error.cause
            return TurnStart(), cause.type if isinstance(cause, ApplicationError) else None
        return begun, None

    async def _follow_on(self, queue: str, work: TurnWork) -> TurnSummary:
        """``run_turn`` on ``queue``, the task queue only the worker ``start_turn`` left the
        turn running on polls: it follows the turn there. When that worker does not take it
        within ``heartbeat_timeout`` (it died, or drained and stopped polling), goes silent, or
        hands the turn over, ``run_turn`` goes to the shared queue, where the next worker takes
        the turn over as the next attempt."""
        options = self._start.options
        while True:
            try:
                return await self._turn_activity(work, attempts=1, queue=queue)
            except ActivityError as error:
                cause = error.cause
                if isinstance(cause, CancelledError):
                    # cancelled before the worker took it: the turn runs on there; ask again,
                    # with the cancel (a second cancel of that one is never asked)
                    work = dataclasses.replace(work, cancel=True)
                    continue
                _raise_refusal(error)
                after = cause.type if isinstance(cause, ApplicationError) else None
            if options.max_attempts <= 1:
                return TurnSummary(work.turn_id, "failed", after or "interrupted", attempt=1)
            work = dataclasses.replace(work, cancel=self._cancel is not None, after=after)
            return await self._run_turn(work, attempts=options.max_attempts - 1)

    async def _run_turn(self, work: TurnWork, *, attempts: int | None = None) -> TurnSummary:
        """The ``run_turn`` activity on the shared queue: runs the turn (or, in histories from
        before workers had queues of their own, follows the one ``start_turn`` left running on
        its worker, started there eagerly); ``attempts``: Temporal's, ``max_attempts`` unless
        told."""
        options = self._start.options
        try:
            return await self._turn_activity(
                work, attempts=options.max_attempts if attempts is None else attempts
            )
        except ActivityError as error:
            if isinstance(error.cause, CancelledError):
                return TurnSummary(work.turn_id, "cancelled", "host")
            _raise_refusal(error)
            # every attempt was lost (workers died) or failed: the ledger holds what they wrote
            cause = error.cause
            reason = cause.type if isinstance(cause, ApplicationError) else None
            return TurnSummary(
                work.turn_id, "failed", reason or "interrupted", attempt=options.max_attempts
            )

    async def _turn_activity(
        self, work: TurnWork, *, attempts: int, queue: str | None = None
    ) -> TurnSummary:
        """Schedule ``run_turn`` (on ``queue``: taken there within ``heartbeat_timeout`` or
        not at all) and wait for its summary; the host's cancel cancels it."""
        options = self._start.options
        handle = workflow.start_activity(
            RUN_TURN,
            work,
            result_type=TurnSummary,
            task_queue=queue,
            schedule_to_start_timeout=(
                None if queue is None else timedelta(seconds=options.heartbeat_timeout)
            ),
            start_to_close_timeout=timedelta(seconds=options.turn_activity_timeout),
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
            retry_policy=RetryPolicy(
                maximum_attempts=attempts,
                initial_interval=timedelta(milliseconds=200),
                non_retryable_error_types=list(NON_RETRYABLE),
            ),
            # the worker records the cancel in the ledger before the activity ends
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        await workflow.wait_condition(
            lambda: handle.done() or (self._cancel is not None and not work.cancel)
        )
        if not handle.done():
            handle.cancel()
        summary: TurnSummary = await handle
        return summary

    @turn.validator
    def _validate_turn(self, request: TurnRequest) -> None:
        self._refuse_turn()

    def _refuse_turn(self) -> None:
        if self._closing or self._closed:
            raise ApplicationError("the session is closed", type="session-closed")
        if not self._opened:
            raise ApplicationError("the session is not open yet", type="session-not-found")
        if self._active is not None:
            raise ApplicationError("a turn is running", type="turn-active")
        if self._operation is not None:
            raise ApplicationError(f"a {self._operation} runs", type="session-busy")

    @workflow.signal(name="cancel")
    def cancel(self, turn_id: str | None = None) -> None:
        if self._active is not None and turn_id in (None, self._active):
            self._cancel = self._active

    @workflow.query(name="active_turn")
    def active_turn(self) -> str | None:
        return self._active

    # -- close ------------------------------------------------------------------------------

    @workflow.update(name="close")
    async def close(self) -> None:
        if self._closed or self._closing:
            await workflow.wait_condition(lambda: self._closed)
            return
        self._closing = True
        if self._active is not None:
            self._cancel = self._active
            await workflow.wait_condition(lambda: self._active is None)
        await workflow.wait_condition(lambda: self._operation is None)
        if self._opened:
            await workflow.execute_activity(
                CLOSE_SESSION,
                self._start,
                start_to_close_timeout=CONTROL_TIMEOUT,
                retry_policy=CONTROL_RETRY,
            )
        self._closed = True

    # -- approvals: the worker asks, the host answers, a workflow timer denies ----------------
    # A deny the workflow gives in the host's stead (the turn ended, the attempt was lost) is
    # recorded as the host's: the seam keeps only "timeout" from a handler.

    @workflow.update(name=PERMISSION_REQUESTED)
    async def permission_requested(self, data: dict[str, Any]) -> dict[str, Any]:
        """The worker's host handler asks (a ``PermissionRequest`` as the contract serialises
        it); the answer is the host's decision, or a deny when nobody answers in time."""
        request = _request(data)
        if request is None or self._refuse_request(request) is not None:
            # validators do not run on replay: what they refuse is denied, never waited on
            return PermissionDecision("deny", reason="no such active turn").to_dict()
        key = request.request_id
        self._pending[key] = request
        try:
            await workflow.wait_condition(
                lambda: key in self._answers or self._active != request.turn_id,
                timeout=timedelta(seconds=self._start.options.approval_timeout),
            )
        except TimeoutError:
            self._answers[key] = PermissionDecision(
                "deny", reason="no answer in time", source="timeout"
            )
        finally:
            self._pending.pop(key, None)
        # the turn ended (cancelled, lost) before anyone answered: nobody waits for a decision
        answer = self._answers.pop(key, None) or PermissionDecision("deny", reason="the turn ended")
        return answer.to_dict()

    @permission_requested.validator
    def _validate_request(self, data: dict[str, Any]) -> None:
        request = _request(data)
        if request is None:
            raise ApplicationError("not a permission request", type="invalid-request")
        refused = self._refuse_request(request)
        if refused is not None:
            raise refused

    @workflow.signal(name=ATTEMPT_STARTED)
    def attempt_started(self, turn_id: str) -> None:
        """A retry of ``turn_id`` starts (its worker was lost): the requests the lost attempt
        asked have nobody waiting for them any more; deny them so no host answers them."""
        for key, request in self._pending.items():
            if request.turn_id == turn_id and key not in self._answers:
                self._answers[key] = PermissionDecision(
                    "deny", reason="the attempt that asked was lost"
                )
        for steer_id, taken_by in list(self._taken.items()):
            if taken_by == turn_id:  # it may or may not have reached the lost attempt
                del self._taken[steer_id]
                self._steered[steer_id] = ("provider-unavailable", "the worker was lost")

    def _refuse_request(self, request: PermissionRequest) -> ApplicationError | None:
        if request.turn_id is None or request.turn_id != self._active:
            return ApplicationError("the request's turn is not running", type="turn-not-found")
        if request.request_id in self._pending:
            return ApplicationError("that request is already pending", type="invalid-request")
        return None

    @workflow.update(name=ANSWER_PERMISSION)
    def answer_permission(self, request_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """The host's answer (a ``PermissionDecision`` as the contract serialises it); the
        waiting request gets it with ``source="host"``."""
        self._refuse_answer(request_id, data)  # validators do not run on replay
        answer = attrs.evolve(PermissionDecision.from_dict(data), source="host")
        self._answers[request_id] = answer
        return answer.to_dict()

    @answer_permission.validator
    def _validate_answer(self, request_id: str, data: dict[str, Any]) -> None:
        self._refuse_answer(request_id, data)

    def _refuse_answer(self, request_id: str, data: dict[str, Any]) -> None:
        if request_id not in self._pending or request_id in self._answers:
            raise ApplicationError("no such pending permission request", type="invalid-request")
        if _decision(data) is None:
            raise ApplicationError("not a permission decision", type="invalid-request")

    @workflow.query(name="pending_permissions")
    def pending_permissions(self) -> list[dict[str, Any]]:
        waiting = (r for key, r in self._pending.items() if key not in self._answers)
        return [request_to_dict(request) for request in waiting]

    # -- steer: the host asks, the worker running the turn takes it (long poll) ---------------

    @workflow.update(name=STEER)
    async def steer(self, request: SteerRequest) -> None:
        """Returns once the running turn's worker handed ``text`` to the harness; fails with
        the worker's refusal (``unsupported-feature``...), or ``turn-not-found`` when the turn
        ended first."""
        self._refuse_steer(request)  # validators do not run on replay
        turn_id = self._active
        assert turn_id is not None
        self._steer_count += 1
        steer_id = f"steer-{self._steer_count}"
        self._steers.append((steer_id, turn_id, request.text))
        await workflow.wait_condition(
            lambda: (
                steer_id in self._steered
                or (self._active != turn_id and steer_id not in self._taken)
            )
        )
        self._steers = [queued for queued in self._steers if queued[0] != steer_id]
        reason, hint = self._steered.pop(
            steer_id, ("turn-not-found", "the turn ended before it took the steer")
        )
        if reason is not None:
            raise ApplicationError(hint or reason, type=reason)

    @steer.validator
    def _validate_steer(self, request: SteerRequest) -> None:
        self._refuse_steer(request)

    def _refuse_steer(self, request: SteerRequest) -> None:
        if self._closing or self._closed:
            raise ApplicationError("the session is closed", type="session-closed")
        if self._active is None or request.turn_id not in (None, self._active):
            raise ApplicationError("no such running turn", type="turn-not-found")
        if self._unsteerable == self._active:
            raise ApplicationError("the harness cannot steer a turn", type="unsupported-feature")
        if not isinstance(request.text, str) or not request.text.strip():
            raise ApplicationError("the steer text is empty", type="invalid-request")

    @workflow.update(name=NEXT_STEER)
    async def next_steer(self, poll: SteerPoll) -> SteerWork | None:
        """The worker running ``poll.turn_id``: the outcome of the steer it took last, and the
        next steer for the turn once one is asked (``None``: the turn ended, stop polling)."""
        if poll.done is not None and self._taken.pop(poll.done.steer_id, None) is not None:
            self._steered[poll.done.steer_id] = (poll.done.reason, poll.done.hint)
        if poll.final or self._active != poll.turn_id:
            return None
        if not poll.steerable:
            self._unsteerable = poll.turn_id
            for steer_id, turn_id, _ in self._steers:
                if turn_id == poll.turn_id:
                    self._steered[steer_id] = ("unsupported-feature", "the harness cannot steer")
            return None
        await workflow.wait_condition(
            lambda: (
                self._active != poll.turn_id
                or any(turn_id == poll.turn_id for _, turn_id, _ in self._steers)
            )
        )
        for index, (steer_id, turn_id, text) in enumerate(self._steers):
            if turn_id == poll.turn_id and self._active == turn_id:
                del self._steers[index]
                self._taken[steer_id] = turn_id
                return SteerWork(steer_id, text)
        return None

    # -- fork, checkpoint, rewind: an activity on a worker while no turn runs ------------------

    @workflow.update(name="fork")
    async def fork(self, request: ForkRequest) -> SessionRefShape:
        """Fork the session on a worker (``session.forked`` in both ledgers) and start the
        child's workflow; returns the child's ref."""
        self._refuse_fork(request)
        assert self._ref is not None
        start = SessionStart(
            session_id=self._start.session_id,
            spec=self._start.spec,
            options=self._start.options,
            ref=self._ref,
        )
        child: SessionRefShape = await self._operate(
            "fork", FORK_SESSION, ForkWork(start, request), SessionRefShape
        )
        spec = dataclasses.replace(self._start.spec, **request.fields)
        await workflow.start_child_workflow(
            SessionWorkflow.run,
            SessionStart(
                session_id=child.session_id, spec=spec, options=self._start.options, ref=child
            ),
            id=child.session_id,
            task_queue=workflow.info().task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
        )
        return child

    @fork.validator
    def _validate_fork(self, request: ForkRequest) -> None:
        self._refuse_fork(request)

    def _refuse_fork(self, request: ForkRequest) -> None:
        self._refuse_turn()
        if not isinstance(request.fields, dict) or not set(request.fields) <= FORK_FIELDS:
            raise ApplicationError("a fork changes only " + ", ".join(sorted(FORK_FIELDS)),
                                   type="invalid-request")  # fmt: skip

    @workflow.update(name="checkpoint")
    async def checkpoint(self) -> str:
        """Snapshot the session's workspace on a worker; the checkpoint id."""
        self._refuse_turn()
        checkpoint_id: str = await self._operate("checkpoint", CHECKPOINT, self._start, str)
        return checkpoint_id

    @checkpoint.validator
    def _validate_checkpoint(self) -> None:
        self._refuse_turn()

    @workflow.update(name="rewind")
    async def rewind(self, checkpoint: str) -> RewindSummary:
        """Go back to ``checkpoint`` on a worker (files, and the conversation where the harness
        can); the ``session.rewound`` it recorded."""
        self._refuse_turn()
        summary: RewindSummary = await self._operate(
            "rewind", REWIND, RewindWork(self._start, checkpoint), RewindSummary
        )
        return summary

    @rewind.validator
    def _validate_rewind(self, checkpoint: str) -> None:
        self._refuse_turn()

    async def _operate(self, name: str, activity: str, work: Any, result_type: type) -> Any:
        self._operation = name
        try:
            return await workflow.execute_activity(
                activity,
                work,
                result_type=result_type,
                start_to_close_timeout=BRANCH_TIMEOUT,
                retry_policy=CONTROL_RETRY,
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type:
                raise ApplicationError(cause.message, type=cause.type) from None
            raise ApplicationError(f"the {name} failed", type="provider-failed") from None
        finally:
            self._operation = None


def _raise_refusal(error: ActivityError) -> None:
    """A turn refused before it started (as the local controller raises): the update fails."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.non_retryable:
        raise ApplicationError(cause.message, type=cause.type) from None


def _request(data: Any) -> PermissionRequest | None:
    """The contract's request from its dict; ``None`` when it is not one (a request id is
    required: the model would otherwise mint a random one, and workflow code must not)."""
    if not isinstance(data, dict) or not isinstance(data.get("request_id"), str):
        return None
    try:
        return request_from_dict(data)
    except (TypeError, ValueError):
        return None


def _decision(data: Any) -> PermissionDecision | None:
    if not isinstance(data, dict):
        return None
    try:
        return PermissionDecision.from_dict(data)
    except (TypeError, ValueError):
        return None
