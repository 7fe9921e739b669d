"""The approval seam across Temporal: the worker's host handler asks the session's workflow.

Every worker-local ``Controller`` gets a :class:`WorkflowApprover` as its ``permission_handler``
(the same async callable a host gives a local controller). When a harness asks
(``context.request_permission``), the handler sends the contract's ``PermissionRequest`` to the
session's workflow as the ``permission_requested`` update and waits for its result: the host's
decision (``answer_permission`` update, ``source="host"``) or the workflow timer's deny
(``source="timeout"``). The workflow holds the pending request; the host learns of it from the
ledger's ``permission.requested`` event (or the ``pending_permissions`` query).

What enters workflow history is bounded and redacted: the request's summary, command and path go
through the session's redactor, and the tool's raw input travels only when the harness can run
an edited copy of it (``can_edit``: the approver needs it to edit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs
from harness_hookspecs import HarnessError, PermissionDecision, PermissionRequest
from harness_hookspecs.permissions import request_to_dict
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from harness_core.redaction import Redactor

from .shapes import ATTEMPT_STARTED, PERMISSION_REQUESTED

#: Seconds the worker-local approval timeout exceeds the workflow's: the workflow timer decides
#: (and records nothing twice); the local one only ends a wait on an unreachable Temporal.
LOCAL_TIMEOUT_GRACE = 30.0


class WorkflowApprover:
    """A ``PermissionHandler`` that asks the workflow named by the request's session id."""

    def __init__(self, redactor_for: Callable[[str], Redactor | None] | None = None) -> None:
        self.client: Client | None = None  # the worker's, set by ``build_worker``
        self._redactor_for = redactor_for

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        if self.client is None or request.session_id is None or request.turn_id is None:
            # the approval seam turns a failing handler into a deny: never an unchecked allow
            raise HarnessError("invalid-request", "no session workflow to ask")
        handle = self.client.get_workflow_handle(request.session_id)
        try:
            answer: dict[str, Any] = await handle.execute_update(
                PERMISSION_REQUESTED, self.for_history(request), result_type=dict
            )
        except (WorkflowUpdateFailedError, RPCError):
            raise HarnessError(
                "provider-unavailable", "the session workflow did not answer"
            ) from None
        return PermissionDecision.from_dict(answer)

    async def attempt_started(self, session_id: str, turn_id: str) -> None:
        """Tell the workflow a retry of ``turn_id`` starts: the lost attempt's requests are void."""
        if self.client is None:
            return
        try:
            await self.client.get_workflow_handle(session_id).signal(ATTEMPT_STARTED, turn_id)
        except RPCError:
            pass  # best effort: those requests still end at the approval timeout

    def for_history(self, request: PermissionRequest) -> dict[str, Any]:
        """The request as it may enter workflow history."""
        redactor = self._redactor_for(request.session_id or "") if self._redactor_for else None
        # the redactor rewrites any attrs record's string fields, not only event payloads
        redacted: Any = (redactor or Redactor()).payload(cast(Any, request))
        if not redacted.can_edit:
            redacted = attrs.evolve(redacted, input={})
        return request_to_dict(redacted)
