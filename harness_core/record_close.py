"""Closing a session in the ledger alone, without starting its harness.

A session whose process died (``kill -9`` of a ``harness run``, a ``serve`` restart) may be
closed by anyone who can claim it, even when its harness cannot start again (a config it lost,
a CLI since removed): the turn the dead process left open ends ``turn.failed(interrupted)``,
then ``session.closed`` is recorded and the record marked closed. Nothing of the adapter runs:
its processes died with their owner (each ran in its own process group, killed with it).
"""

from __future__ import annotations

from typing import Any

from harness_hookspecs import Event, HarnessError, Payload, SessionClosed, SessionRecord, TurnFailed
from harness_hookspecs.protocols import LedgerStore

from .clock import now
from .digests import event_id_prefix
from .retry import dangling_turn


def closing_events(ledger: LedgerStore, record: SessionRecord) -> list[Event]:
    """The events that close ``record``'s session (the caller holds its claim): the dangling
    turn's ``interrupted`` terminal when one is open, then ``session.closed``."""
    ref = record.ref
    last = ledger.last_sequence(ref.session_id)
    dangling = dangling_turn(ledger, ref.session_id, last)
    ends: list[tuple[str | None, Payload]] = []
    if dangling is not None:
        ends.append((dangling, TurnFailed(reason="interrupted")))
    ends.append((None, SessionClosed()))
    prefix = event_id_prefix(ref.session_id)
    return [
        Event(
            event_id=f"{prefix}{last + index}",
            sequence=last + index,
            session_id=ref.session_id,
            turn_id=turn_id,
            harness=ref.harness,
            timestamp=now(),
            type=payload.TYPE,
            payload=payload,
        )
        for index, (turn_id, payload) in enumerate(ends, start=1)
    ]


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
