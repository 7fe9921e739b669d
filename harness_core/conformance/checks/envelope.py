"""envelope: every event carries a complete, well-formed envelope."""

from __future__ import annotations

from harness_hookspecs import PROTOCOL_VERSION
from harness_hookspecs.bounds import SESSION_ID_MAX, TURN_ID_MAX, has_control

from ..check import Evidence, Outcome, check, verdict
from ..rules import SESSION_TYPES, timestamp_ok


@check("envelope", "every event carries a complete, well-formed envelope")
def envelope(evidence: Evidence) -> Outcome:
    run = evidence.run
    problems = []
    harness = run.descriptor.harness if run.descriptor else run.name
    for session_id, session_events in evidence.probe.events.items():
        ids: set[str] = set()
        for e in session_events:
            where = f"event {e.sequence} ({e.type})"
            if e.protocol_version != PROTOCOL_VERSION or isinstance(e.protocol_version, bool):
                problems.append(f"{where}: protocol_version {e.protocol_version!r}")
            if (
                not isinstance(e.event_id, str)
                or not 1 <= len(e.event_id) <= 256
                or has_control(e.event_id)
            ):
                problems.append(f"{where}: event_id is not a bounded string")
            if isinstance(e.sequence, bool) or not isinstance(e.sequence, int) or e.sequence < 1:
                problems.append(f"{where}: sequence is not a positive integer")
            if e.session_id != session_id or not 1 <= len(e.session_id) <= SESSION_ID_MAX:
                problems.append(f"{where}: session_id is wrong")
            if e.harness != harness:
                problems.append(f"{where}: harness {e.harness!r} is not {harness!r}")
            if not timestamp_ok(e.timestamp):
                problems.append(f"{where}: timestamp {e.timestamp!r} is not ISO 8601 with a zone")
            if e.type in SESSION_TYPES:
                if e.turn_id is not None:
                    problems.append(f"{where}: a session event carries a turn_id")
            elif (
                not isinstance(e.turn_id, str)
                or not 1 <= len(e.turn_id) <= TURN_ID_MAX
                or has_control(e.turn_id)
            ):
                problems.append(f"{where}: turn_id is missing or out of bounds")
            if e.parent_event_id is not None and e.parent_event_id not in ids:
                problems.append(f"{where}: parent_event_id names no earlier event")
            ids.add(e.event_id)
    return verdict(
        problems, f"{len(evidence.events)} events, all envelopes complete", evidence.nothing
    )
