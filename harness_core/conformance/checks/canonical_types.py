"""canonical-types: only canonical event types, and only those an adapter may yield."""

from __future__ import annotations

from harness_hookspecs import EVENT_TYPES, PAYLOAD_TYPES

from ..check import Evidence, Outcome, check, verdict


@check("canonical-types", "only canonical event types, and only those an adapter may yield")
def canonical_types(evidence: Evidence) -> Outcome:
    problems = list(evidence.probe.violations.get("canonical-types", []))
    events = evidence.events
    for e in events:
        cls = PAYLOAD_TYPES.get(e.type)
        if e.type not in EVENT_TYPES or cls is None or type(e.payload) is not cls:
            problems.append(f"event {e.sequence}: {e.type!r} is not canonical")
    return verdict(
        problems, f"{len({e.type for e in events})} canonical types seen", evidence.nothing
    )
