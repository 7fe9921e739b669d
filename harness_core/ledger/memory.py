"""The in-memory store: for tests and embedding; nothing survives the process."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from harness_hookspecs import Event, HarnessError, SessionRecord

from ._base import SequenceGuard, nth_event


class MemoryStore:
    #: appends are complete when ``append`` returns; ``flush_async`` need not hop to a thread
    flush_is_noop = True

    def __init__(self) -> None:
        self._sessions: dict[str, SessionRecord] = {}
        self._events: dict[str, list[Event]] = {}
        self._lock = threading.Lock()
        self._guard = SequenceGuard(
            lambda sid: len(self._events.get(sid, ())),
            lambda sid, seq: nth_event(self._events, sid, seq),
        )

    def create_session(self, record: SessionRecord) -> None:
        with self._lock:
            if record.session_id in self._sessions:
                raise HarnessError("ledger-failed", "the session already exists")
            self._sessions[record.session_id] = record

    def update_session(self, record: SessionRecord) -> None:
        with self._lock:
            self._sessions[record.session_id] = record

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        records = sorted(self._sessions.values(), key=lambda r: r.created_at, reverse=True)
        return records[:limit] if limit is not None else records

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

    def close(self) -> None:
        return None
