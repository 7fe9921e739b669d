"""Lifecycle hooks: the seam a host can wrap.

The runtime's controller calls these; the runtime itself provides the default implementation of
each (``trylast``), which dispatches to the registered adapter, so plugin authors never write
dispatch code. A host adds cross-cutting behaviour (audit, limits, redaction) with
``@hookimpl(wrapper=True)`` implementations around them.

pluggy is synchronous: hooks that do I/O return an awaitable (or an async iterator), which the
controller awaits (or iterates) under anyio. All are ``firstresult``: the first non-``None``
result wins, and the default implementation always answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

from ..events import Payload
from ..markers import hookspec
from ..models import (
    CancelTurnRequest,
    CloseSessionRequest,
    ForkSessionRequest,
    HarnessDescriptor,
    OpenSessionRequest,
    ResumeSessionRequest,
    RewindSessionRequest,
    RunTurnRequest,
    SessionRef,
    SteerTurnRequest,
)
from ..protocols import SessionContext


@hookspec(firstresult=True)
def harness_describe(harness: str) -> HarnessDescriptor | None:
    """Describe the harness registered as ``harness``.

    Called by the controller before every open/resume and by ``harness describe``. Returns the
    :class:`HarnessDescriptor` (synchronously), or ``None`` to let the next implementation answer;
    the default raises ``HarnessError("invalid-request")`` for an unknown name.
    """


@hookspec(firstresult=True)
def harness_open_session(
    request: OpenSessionRequest, context: SessionContext
) -> Awaitable[SessionRef] | None:
    """Open a new session.

    Called by the controller after the sandbox is provisioned and credentials are resolved, with
    the session's :class:`SessionContext`. Returns an awaitable of the new :class:`SessionRef`
    (whose ``provider`` and ``target`` must match the request); raises ``HarnessError``.
    """


@hookspec(firstresult=True)
def harness_resume_session(
    request: ResumeSessionRequest, context: SessionContext
) -> Awaitable[SessionRef] | None:
    """Reattach to a session from its complete :class:`SessionRef`.

    Called by the controller (possibly a new one, in a new process) only when the descriptor
    claims ``resume``. Returns an awaitable of the (same) :class:`SessionRef`.
    """


@hookspec(firstresult=True)
def harness_run_turn(
    request: RunTurnRequest, context: SessionContext
) -> AsyncIterator[Payload] | None:
    """Run one turn.

    Called by the controller when no other turn of the session is active. Returns an async
    iterator of payloads, ending with exactly one terminal payload (``TurnCompleted``,
    ``TurnFailed`` or ``TurnCancelled``). The controller stamps envelopes, enforces deadlines and
    event-count limits, and records a stream that ends without a terminal as failed.
    """


@hookspec(firstresult=True)
def harness_cancel_turn(
    request: CancelTurnRequest, context: SessionContext
) -> Awaitable[None] | None:
    """Ask the provider to stop the active turn.

    Called by the controller on ``cancel_turn`` only when the descriptor claims ``cancel``, just
    before it cancels the turn's task scope (which kills the turn's processes). Returns an
    awaitable of ``None``.
    """


@hookspec(firstresult=True)
def harness_close_session(
    request: CloseSessionRequest, context: SessionContext
) -> Awaitable[None] | None:
    """Release the adapter's resources for a session.

    Called by the controller once per open session on ``close_session`` (a second close is
    answered by the controller without calling this). Returns an awaitable of ``None``. Closing
    does not delete provider-side history.
    """


@hookspec(firstresult=True)
def harness_steer_turn(
    request: SteerTurnRequest, context: SessionContext
) -> Awaitable[None] | None:
    """Hand the host's text to the running turn (feature ``steer``).

    Called by the controller on ``steer`` while the turn ``request.turn_id`` is active, only
    when the descriptor claims ``steer``. Returns an awaitable of ``None`` once the harness has
    the text (it reaches the model before the turn's next model request); the controller then
    records ``turn.steered`` in the turn. Raises ``HarnessError`` (nothing is recorded then).
    """


@hookspec(firstresult=True)
def harness_fork_session(
    request: ForkSessionRequest, context: SessionContext
) -> Awaitable[SessionRef] | None:
    """Open the child of a fork (feature ``fork``), instead of ``harness_open_session``.

    Called by the controller on ``fork`` with the child's own :class:`SessionContext` (its
    session id, state directory and sandbox). Returns an awaitable of the child's
    :class:`SessionRef`, whose conversation is the parent's ``request.turns`` and nothing
    after; the parent is left as it was. The controller records ``session.forked`` in both.
    """


@hookspec(firstresult=True)
def harness_rewind_session(
    request: RewindSessionRequest, context: SessionContext
) -> Awaitable[None] | None:
    """Take the harness's conversation back to ``request.turns_kept`` turns (feature
    ``checkpoint``).

    Called by the controller on ``rewind`` when no turn is active, after the runtime restored
    the workspace, only when the descriptor claims ``checkpoint``. Returns an awaitable of
    ``None``; the session's next turn sends the model none of the later turns.
    """
