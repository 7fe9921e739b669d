"""ledger-round-trip: the ledger read back from disk equals the events streamed."""

from __future__ import annotations

from typing import Any

from ...serialize import event_to_dict
from ..check import Evidence, Outcome, check, verdict


@check("ledger-round-trip", "the ledger read back from disk equals the events streamed")
def ledger_round_trip(evidence: Evidence) -> Outcome:
    stored = evidence.stored
    problems = []
    if evidence.read_error is not None:
        problems.append(evidence.read_error)
    else:
        by_id: dict[tuple[str, str], dict[str, Any]] = {}
        for session_id, session_events in evidence.probe.events.items():
            expected = [event_to_dict(e) for e in session_events]
            got = stored.get(session_id, [])
            if got != expected:
                problems.append(
                    f"session {session_id[:12]}: the ledger holds {len(got)} events, "
                    f"{len(expected)} were streamed"
                    + ("" if len(got) != len(expected) else ", and they differ")
                )
            by_id.update({(session_id, d["event_id"]): d for d in got})
        for t in evidence.turns:
            for e in t.seen:
                if by_id.get((e.session_id, e.event_id)) != event_to_dict(e):
                    problems.append(
                        f"{t.label}: event {e.sequence} as delivered differs from the ledger"
                    )
                    break
    return verdict(
        problems,
        f"{sum(len(v) for v in stored.values())} events read back from "
        + ("SQLite" if evidence.run.sqlite_path() else "the ledger")
        + ", equal to the stream",
        evidence.nothing,
    )
