"""What every store shares: the gap-free sequence check done at append time."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from harness_hookspecs import Event, HarnessError

from ..serialize import payload_from_dict, payload_json

#: The envelope columns of one event row, in the order :func:`event_row` gives them.
EVENT_COLUMNS = (
    "session_id, sequence, event_id, turn_id, type, timestamp, harness, parent_event_id, "
    "protocol_version, payload"
)

#: A different event at a sequence already used, or a sequence past the next one.
CONFLICT = "a different event is already recorded at this sequence"
GAP = "sequence gap refused"


def event_row(e: Event) -> tuple[Any, ...]:
    """One event as a row of :data:`EVENT_COLUMNS` (the payload as compact JSON)."""
    return (
        e.session_id,
        e.sequence,
        e.event_id,
        e.turn_id,
        e.type,
        e.timestamp,
        e.harness,
        e.parent_event_id,
        e.protocol_version,
        payload_json(e.payload),
    )


def event_from_row(row: Sequence[Any]) -> Event:
    """The event stored as a row of :data:`EVENT_COLUMNS`."""
    try:
        payload = json.loads(row[9])
    except (TypeError, ValueError):
        raise HarnessError("ledger-failed", "a stored event is not JSON") from None
    return Event(
        session_id=row[0],
        sequence=row[1],
        event_id=row[2],
        turn_id=row[3],
        type=row[4],
        timestamp=row[5],
        harness=row[6],
        parent_event_id=row[7],
        protocol_version=row[8],
        payload=payload_from_dict(row[4], payload),
    )


def nth_event(buckets: dict[str, list[Event]], session_id: str, sequence: int) -> Event | None:
    """The event at ``sequence`` of a session kept in memory as a gap-free list from 1."""
    bucket = buckets.get(session_id, ())
    return bucket[sequence - 1] if 0 < sequence <= len(bucket) else None


class SequenceGuard:
    """Refuses an append whose sequence is not exactly the session's last + 1.

    An exact replay (an event equal to the one stored at its sequence: a retried write) is
    accepted and dropped, so appending the same events twice records them once; a different
    event at a used sequence is refused, and so is a gap.

    ``refresh(session_id)`` (a store other processes write too): the committed last sequence,
    after committing this store's own queue; asked before refusing, since another writer may
    have moved the session on.
    """

    def __init__(
        self,
        last_stored: Callable[[str], int],
        stored_event: Callable[[str, int], Event | None],
        refresh: Callable[[str], int] | None = None,
    ) -> None:
        self._last: dict[str, int] = {}
        self._last_stored = last_stored
        self._stored_event = stored_event
        self._refresh = refresh

    def check(self, events: Sequence[Event]) -> Sequence[Event]:
        """The events to store: ``events`` less exact replays; raises on a conflict or a gap."""
        last = self._last
        if len(events) == 1:  # the controller appends one event at a time
            event = events[0]
            sid = event.session_id
            previous = last.get(sid)
            if previous is None:
                previous = self._last_stored(sid)
            if event.sequence != previous + 1 and not self._moved_on(event):
                self._refuse(event, previous)
                return ()
            last[sid] = event.sequence
            return events
        staged: dict[str, int] = {}
        fresh: list[Event] = []
        for event in events:
            sid = event.session_id
            previous = staged.get(sid)
            if previous is None:
                previous = last.get(sid)
                if previous is None:
                    previous = self._last_stored(sid)
            if event.sequence != previous + 1 and not (sid not in staged and self._moved_on(event)):
                self._refuse(event, previous)
                continue  # an exact replay: already stored
            staged[sid] = event.sequence
            fresh.append(event)
        last.update(staged)
        return fresh

    def _moved_on(self, event: Event) -> bool:
        """Whether ``event`` continues the session as another writer left it."""
        if self._refresh is None:
            return False
        last = self._refresh(event.session_id)
        self._last[event.session_id] = last
        return event.sequence == last + 1

    def _refuse(self, event: Event, previous: int) -> None:
        """Raise unless ``event`` is an exact replay of what is stored at its sequence."""
        if 0 < event.sequence <= previous:
            if self._stored_event(event.session_id, event.sequence) == event:
                return
            raise HarnessError("ledger-failed", CONFLICT)
        raise HarnessError("ledger-failed", GAP)

    def seed(self, session_id: str, last: int) -> None:
        """Record a session's last stored sequence when the store already knows it."""
        self._last.setdefault(session_id, last)

    def reset(self, session_id: str, last: int) -> None:
        """Take ``last`` as the session's last sequence (another writer may have appended)."""
        self._last[session_id] = last

    def last(self, session_id: str) -> int | None:
        return self._last.get(session_id)
