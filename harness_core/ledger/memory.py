"""The in-memory store: for tests and embedding; nothing survives the process.

It cannot promise durability: "durable before delivered" holds only in the sense that an event
is stored before anyone sees it; a crash loses everything. Claims are per store instance (one
process): a second store cannot see them, so ownership only separates controllers sharing it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from harness_hookspecs import Event, HarnessError, SessionRecord

from .base import SequenceGuard, SessionsInMemory, nth_event


class MemoryStore(SessionsInMemory):
    #: appends are complete when ``append`` returns (CommitsOnAppend): no flush before delivery
    commits_on_append = True
    syncs_on_flush = False

    def __init__(self) -> None:
        self._sessions: dict[str, SessionRecord] = {}
        self._events: dict[str, list[Event]] = {}
        self._lock = threading.Lock()
        self._guard = SequenceGuard(
            lambda sid: len(self._events.get(sid, ())),
            lambda sid, seq: nth_event(self._events, sid, seq),
        )
        self._epochs: dict[str, int] = {}  # every session claimed -> its epoch
        self._held: set[str] = set()

    def create_session(self, record: SessionRecord) -> None:
        with self._lock:
            if record.session_id in self._sessions:
                raise HarnessError("ledger-failed", "the session already exists")
            self._sessions[record.session_id] = record

    def update_session(self, record: SessionRecord) -> None:
        with self._lock:
            self._sessions[record.session_id] = record

    def append(self, events: Sequence[Event]) -> None:
        with self._lock:
            for event in self._guard.check(events):
                bucket = self._events.get(event.session_id)
                if bucket is None:
                    bucket = self._events[event.session_id] = []
                bucket.append(event)

    def flush(self) -> None:
        return None

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        # Sequences are gap-free from 1, so "after N" is index N.
        bucket = self._events.get(session_id, [])
        after = max(0, after)
        end = None if limit is None else after + max(0, limit)
        return bucket[after:end]

    def last_sequence(self, session_id: str) -> int:
        return len(self._events.get(session_id, ()))

    def claim(self, session_id: str) -> int:
        with self._lock:
            if session_id in self._held:
                return self._epochs[session_id]
            epoch = self._epochs[session_id] = self._epochs.get(session_id, 0) + 1
            self._held.add(session_id)
            return epoch

    def release(self, session_id: str) -> None:
        with self._lock:
            self._held.discard(session_id)

    def claimed(self, session_id: str) -> bool:
        return session_id in self._held

    def close(self) -> None:
        self._held.clear()
