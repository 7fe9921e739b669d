"""``SessionWorkflow``: one Temporal workflow per session (workflow id = session id).

Deterministic by construction: no I/O, no clock or randomness outside Temporal's APIs; every
plugin call (open, turn, close) is an activity on some worker, which writes the events to the
shared ledger. History holds only the records of :mod:`.shapes`.

- update ``open``: opens the session (first thing a client does after starting the workflow);
- update ``turn``: runs one turn to its end and returns its summary; the validator refuses a
  closed session or an active turn (the turn id is the client's, so a retry keeps it);
- signal ``cancel``: cancels the running turn's activity; the worker cancels the turn through
  its controller and the activity returns the ``cancelled`` summary;
- update ``close``: cancels a running turn, closes the session on a worker; idempotent;
- signal ``permission_requested`` + update ``answer_permission``: a pending approval answered by
  the host, or denied by a workflow timer (not yet wired to the host approval seam);
- continue-as-new between turns when the history grows.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from .shapes import (
        CLOSE_SESSION,
        NON_RETRYABLE,
        OPEN_SESSION,
        RUN_TURN,
        ApprovalDecision,
        ApprovalRequest,
        SessionRefShape,
        SessionStart,
        TurnRequest,
        TurnSummary,
        TurnWork,
    )

#: Short control activities (open / close): a few attempts, then the error stands.
CONTROL_TIMEOUT = timedelta(seconds=120)
CONTROL_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=list(NON_RETRYABLE))


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
        self._pending: dict[str, ApprovalRequest] = {}
        self._decisions: dict[str, ApprovalDecision] = {}

    @workflow.run
    async def run(self, start: SessionStart) -> int:
        await workflow.wait_condition(
            lambda: self._closed or (self._active is None and self._history_is_long())
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
        )
        handle = workflow.start_activity(
            RUN_TURN,
            work,
            result_type=TurnSummary,
            start_to_close_timeout=timedelta(seconds=options.turn_activity_timeout),
            heartbeat_timeout=timedelta(seconds=options.heartbeat_timeout),
            retry_policy=RetryPolicy(
                maximum_attempts=options.max_attempts,
                initial_interval=timedelta(milliseconds=200),
                non_retryable_error_types=list(NON_RETRYABLE),
            ),
            # the worker records the cancel in the ledger before the activity ends
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        try:
            await workflow.wait_condition(lambda: handle.done() or self._cancel is not None)
            if not handle.done():
                handle.cancel()
            summary: TurnSummary = await handle
            return summary
        except ActivityError as error:
            if isinstance(error.cause, CancelledError):
                return TurnSummary(request.turn_id, "cancelled", "host")
            if isinstance(error.cause, ApplicationError) and error.cause.non_retryable:
                # refused before it started (as the local controller raises): the update fails
                raise ApplicationError(error.cause.message, type=error.cause.type) from None
            # every attempt was lost (workers died) or failed: the ledger holds what they wrote
            cause = error.cause
            reason = cause.type if isinstance(cause, ApplicationError) else None
            return TurnSummary(
                request.turn_id, "failed", reason or "interrupted", attempt=options.max_attempts
            )
        finally:
            self._active, self._cancel = None, None
            self._turns += 1

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
        if self._opened:
            await workflow.execute_activity(
                CLOSE_SESSION,
                self._start,
                start_to_close_timeout=CONTROL_TIMEOUT,
                retry_policy=CONTROL_RETRY,
            )
        self._closed = True

    # -- approvals (to be wired to the host approval seam) ----------------------------------

    @workflow.signal(name="permission_requested")
    async def permission_requested(self, request: ApprovalRequest) -> None:
        self._pending[request.request_id] = request
        wait = (
            request.timeout if request.timeout is not None else self._start.options.approval_timeout
        )
        try:
            await workflow.wait_condition(
                lambda: request.request_id in self._decisions, timeout=timedelta(seconds=wait)
            )
        except TimeoutError:
            self._decisions[request.request_id] = ApprovalDecision(
                request.request_id, allow=False, by="timeout"
            )
        self._pending.pop(request.request_id, None)

    @workflow.update(name="answer_permission")
    def answer_permission(self, decision: ApprovalDecision) -> ApprovalDecision:
        self._decisions[decision.request_id] = ApprovalDecision(decision.request_id, decision.allow)
        return self._decisions[decision.request_id]

    @answer_permission.validator
    def _validate_answer(self, decision: ApprovalDecision) -> None:
        if decision.request_id not in self._pending:
            raise ApplicationError("no such pending permission request", type="invalid-request")

    @workflow.query(name="permission_decision")
    def permission_decision(self, request_id: str) -> ApprovalDecision | None:
        return self._decisions.get(request_id)
