"""event-ids: event ids are unique across all sessions."""

from __future__ import annotations

from collections import Counter

from ..check import Evidence, Outcome, check, verdict


@check("event-ids", "event ids are unique across all sessions")
def event_ids(evidence: Evidence) -> Outcome:
    events = evidence.events
    seen = Counter(e.event_id for e in events)
    dupes = sorted(i for i, n in seen.items() if n > 1)
    return verdict(
        [f"{len(dupes)} duplicated ids, e.g. {dupes[0]!r}"] if dupes else [],
        f"{len(events)} unique ids",
        evidence.nothing,
    )
