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
- update ``permission_requested`` (from the worker running the turn: the approval seam's host
  handler there, see :mod:`.approvals`) waits for update ``answer_permission`` (from the host;
  its validator refuses unknown ids) or a workflow timer that denies (``source="timeout"``);
  both carry the contract's ``PermissionRequest`` / ``PermissionDecision`` as plain dicts;
- continue-as-new between turns when the history grows.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    import attrs
    from harness_hookspecs import PermissionDecision, PermissionRequest
    from harness_hookspecs.permissions import request_from_dict, request_to_dict

    from .shapes import (
        ANSWER_PERMISSION,
        ATTEMPT_STARTED,
        CLOSE_SESSION,
        NON_RETRYABLE,
        OPEN_SESSION,
        PERMISSION_REQUESTED,
        RUN_TURN,
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
        self._pending: dict[str, PermissionRequest] = {}  # asked, not yet answered
        self._answers: dict[str, PermissionDecision] = {}  # answered, not yet collected

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
            approval_timeout=options.approval_timeout,
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
