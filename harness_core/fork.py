"""``Controller.fork``: a child session that continues a parent's conversation up to a point.

The child is opened like any session (its own id, sandbox, state directory, record and
``session.opened``), through the harness's ``harness_fork_session`` instead of its open, with
the parent's turns up to the fork point read from the parent's ledger. ``session.forked`` is
then recorded in the child and in the parent (when the parent is open: a closed session's
record ends with its ``session.closed``), both naming the parent, the child and the event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
from harness_hookspecs import (
    Event,
    ForkSessionRequest,
    HarnessDescriptor,
    HarnessError,
    LedgerStore,
    OpenSessionRequest,
    Payload,
    SessionForked,
    SessionOpened,
    SessionRecord,
    SessionRef,
)

from .branching import conversation_at
from .budgets import Budget
from .context import state_path
from .delivery import Delivery
from .hook_calls import HookCalls
from .recorder import SessionRecorder
from .redaction import Redactor
from .request_checks import is_uuid, safe_hint
from .session_config import resolved_config
from .turn import LiveSession

__all__ = ["ForkOwner", "fork_session"]


class ForkOwner(Protocol):
    """What a fork needs from the controller (a protocol: no import circle)."""

    ledger: LedgerStore
    delivery: Delivery
    call: HookCalls
    budget: Budget
    state_root: Path
    live_sessions: dict[str, LiveSession]

    def describe(self, harness: str) -> HarnessDescriptor: ...

    async def open_live(
        self,
        request: OpenSessionRequest,
        session_id: str | None,
        limits: Budget,
        *,
        fork: Callable[[Any], Any] | None = None,
    ) -> LiveSession: ...


async def fork_session(
    controller: ForkOwner,
    session: SessionRef | str,
    at: str | None,
    session_id: str | None,
    fields: Mapping[str, Any],
) -> SessionRef:
    """See :meth:`Controller.fork`."""
    parent_id = session if isinstance(session, str) else session.session_id
    if session_id is not None and not is_uuid(session_id):
        raise HarnessError("invalid-request", "the session id is a UUID")
    ledger = controller.ledger
    record = ledger.get_session(parent_id)
    if record is None:
        raise HarnessError("session-not-found")
    # The capability first: a harness without fork is refused whatever else the request says.
    if "fork" not in controller.describe(record.ref.harness).features:
        raise HarnessError("unsupported-feature", f"{record.ref.harness} cannot fork a session")
    parent_live = controller.live_sessions.get(parent_id)
    # An open parent no process of ours holds is claimed for its side of the record first
    # (session-busy while another process runs it: then nothing is opened).
    claimed = parent_live is None and record.status == "open"
    if claimed:
        ledger.claim(parent_id)
    try:
        ledger.flush()
        events = await anyio.to_thread.run_sync(ledger.events, parent_id)
        fork_request = _fork_request(controller, record, events, at, fields)
        live = await controller.open_live(
            fork_request.open,
            session_id,
            controller.budget,
            fork=lambda context: controller.call(
                "harness_fork_session", request=fork_request, context=context
            ),
        )
        forked = SessionForked(
            parent_session_id=parent_id,
            child_session_id=live.ref.session_id,
            at_event_id=fork_request.at_event_id,
            turns=len(fork_request.turns),
        )
        live.recorder.record(None, forked)
        await live.recorder.deliver()
        if parent_live is not None:
            parent_live.recorder.record(None, forked)
            await parent_live.recorder.deliver()
        elif claimed:
            await _record_unheld(controller, record.ref, forked)
        return live.ref
    finally:
        if claimed:
            ledger.release(parent_id)


def _fork_request(
    controller: ForkOwner,
    record: SessionRecord,
    events: Sequence[Event],
    at: str | None,
    fields: Mapping[str, Any],
) -> ForkSessionRequest:
    """The child's request: the parent's record with ``fields`` over it, and the parent's
    conversation up to its event ``at`` (``invalid-request`` naming an unknown event)."""
    parent_id = record.ref.session_id
    point = events[-1] if at is None and events else None
    if at is not None:
        point = next((event for event in events if event.event_id == at), None)
        if point is None:
            raise HarnessError(
                "invalid-request", f"{at[:80]!r} is not an event of session {parent_id}"
            )
    kept = conversation_at(controller.ledger, events, point.sequence if point is not None else 0)
    opened = events[0].payload if events and isinstance(events[0].payload, SessionOpened) else None
    if record.imported and not fields.get("workspace"):
        # A bundle's workspace, config and posture are data, not authority (a CLI path, a
        # base URL the key is sent to, a permissive posture): the child states its own.
        raise HarnessError(
            "invalid-request",
            f"session {parent_id} was imported: its fork needs a workspace of its own",
        )
    inherited: dict[str, Any] = {
        "harness": record.ref.harness,
        "target": record.ref.target,
        "workspace": record.workspace,
        "model": record.model,
        "posture": record.posture,
        "agent": record.agent,
        "user": record.user,
        "config": resolved_config(record.config),
        # the parent's instructions and thinking policy hold in the child too
        "instructions": opened.instructions if opened is not None else None,
        "record_thinking": opened.record_thinking if opened is not None else True,
    }
    if record.imported:  # the request's own defaults, not the bundle's
        del inherited["posture"], inherited["config"]
    try:
        request = OpenSessionRequest(**{**inherited, **fields})
        return ForkSessionRequest(
            parent=record.ref,
            open=request,
            turns=tuple(kept),
            at_event_id=point.event_id if point is not None else None,
            parent_state_dir=state_path(controller.state_root, record.ref.harness, parent_id),
        )
    except (TypeError, ValueError) as error:
        raise HarnessError("invalid-request", safe_hint(error)) from None


async def _record_unheld(controller: ForkOwner, ref: SessionRef, payload: Payload) -> None:
    """Record ``payload`` in an open session no live process of ours holds (claimed)."""
    ledger = controller.ledger
    recorder = SessionRecorder(
        ref,
        ledger=ledger,
        delivery=controller.delivery,
        redactor=Redactor(),
        next_sequence=ledger.last_sequence(ref.session_id) + 1,
    )
    recorder.record(None, payload)
    await recorder.deliver()
    await recorder.flush()
