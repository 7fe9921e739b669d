"""sequence: sequence is session-wide, gap-free and delivered in order."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict
from ..rules import span


@check("sequence", "sequence is session-wide, gap-free and delivered in order")
def sequence(evidence: Evidence) -> Outcome:
    problems = []
    for session_id, session_events in evidence.probe.events.items():
        sequences = [e.sequence for e in session_events]
        if sequences != list(range(1, len(sequences) + 1)):
            problems.append(f"session {session_id[:12]}: sequences {span(sequences)} have gaps")
    for turn in evidence.turns:
        delivered = [e.sequence for e in turn.seen]
        if delivered and delivered != list(range(delivered[0], delivered[0] + len(delivered))):
            problems.append(f"{turn.label}: delivered out of order {span(delivered)}")
    return verdict(
        problems,
        f"{len(evidence.probe.events)} sessions, gap-free from 1, delivered in order",
        evidence.nothing,
    )
