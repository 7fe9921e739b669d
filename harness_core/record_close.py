"""Closing a session in the ledger alone, without starting its harness.

A session whose process died (``kill -9`` of a ``harness run``, a ``serve`` restart) may be
closed by anyone who can claim it, even when its harness cannot start again (a config it lost,
a CLI since removed): the turn the dead process left open ends ``turn.failed(interrupted)``,
then ``session.closed`` is recorded and the record marked closed. Nothing of the adapter runs:
its processes died with their owner (each ran in its own process group, killed with it).
"""

from __future__ import annotations

from typing import Any

from harness_hookspecs import HarnessError, SessionClosed, SessionRecord, TurnFailed
from harness_hookspecs.protocols import LedgerStore

from .delivery import Delivery
from .recorder import SessionRecorder
from .redaction import Redactor
from .retry import dangling_turn


def record_ends(
    ledger: LedgerStore, delivery: Delivery | None, record: SessionRecord, *, close: bool = True
) -> SessionRecorder:
    """Record what ends ``record``'s session (the caller holds its claim) through the session's
    one write path: the dangling turn's ``interrupted`` terminal when one is open, then
    ``session.closed`` (not with ``close=False``: the turn's end alone, or nothing when no turn
    is open). Returns the recorder, to deliver and flush. ``delivery``: the controller's, or
    ``None`` where nobody watches (``harness reconcile``). Nothing to redact: these payloads
    carry no text."""
    session_id = record.ref.session_id
    last = ledger.last_sequence(session_id)
    recorder = SessionRecorder(
        record.ref, ledger=ledger, delivery=delivery, redactor=Redactor(), next_sequence=last + 1
    )
    dangling = dangling_turn(ledger, session_id, last)
    if dangling is not None:
        recorder.record(dangling, TurnFailed(reason="interrupted"))
    if close:
        recorder.record(None, SessionClosed())
    return recorder


async def close_from_anywhere(controller: Any, session_id: str) -> None:
    """Close a session this process may not hold (``harness close``, ``serve``'s close):
    resumed first, so its harness closes what it keeps; when the harness cannot start again,
    closed in the ledger alone. ``session-busy`` while another live process holds it."""
    try:
        await controller.resume_session(session_id)  # a live session: its ref at once
    except HarnessError as error:
        if error.reason == "session-closed":
            return
        if error.reason in ("session-busy", "session-not-found", "ledger-failed"):
            raise
    await controller.close_session(session_id)
