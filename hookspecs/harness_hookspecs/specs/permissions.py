"""The approval policy hook: plugins that answer permission requests.

The runtime answers an adapter's ``context.request_permission(request)`` from, in order: the
host's handler given to the ``Controller`` (if any answers), this hook, then the posture's
default. Implement it to enforce a policy (an allow list, an audit gate); wrap it
(``@hookimpl(wrapper=True)``) to observe or override the other implementations' answer.
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..markers import hookspec
from ..permissions import PermissionDecision, PermissionRequest
from ..protocols import SessionContext


@hookspec(firstresult=True)
def harness_permission_decide(
    request: PermissionRequest, context: SessionContext
) -> PermissionDecision | Awaitable[PermissionDecision | None] | None:
    """Decide a permission request the host's handler left open.

    Called by the runtime while the adapter waits (inside the turn, under the approval timeout).
    Returns a :class:`PermissionDecision` (or an awaitable of one) to decide, or ``None`` to let
    the next implementation - finally the posture's default - answer. The decision is recorded
    as ``permission.resolved`` with ``source="policy"``.
    """
