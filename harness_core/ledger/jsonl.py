"""A JSONL file store: ``sessions.jsonl`` (last record wins) and ``events.jsonl`` in a directory.

Appends are buffered in memory and written (and fsynced) by ``flush``; the controller flushes at
every terminal event and at close.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import dumps_event, loads_event, record_from_dict, record_to_dict
from ._base import SequenceGuard


class JsonlStore:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:
            raise HarnessError("ledger-failed", "the JSONL ledger directory is unusable") from None
        self._sessions_path = os.path.join(directory, "sessions.jsonl")
        self._events_path = os.path.join(directory, "events.jsonl")
        self._lock = threading.Lock()
        self._buffer: list[Event] = []
        self._sessions: dict[str, SessionRecord] = {}
        self._events: dict[str, list[Event]] = {}
        self._load()
        self._guard = SequenceGuard(lambda sid: len(self._events.get(sid, ())))

    def _load(self) -> None:
        if os.path.exists(self._sessions_path):
            with open(self._sessions_path, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        record = record_from_dict(json.loads(line))
                        self._sessions[record.session_id] = record
        if os.path.exists(self._events_path):
            with open(self._events_path, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        event = loads_event(line)
                        self._events.setdefault(event.session_id, []).append(event)

    def _write(self, path: str, lines: list[str]) -> None:
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(lines))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            raise HarnessError("ledger-failed", "the JSONL ledger could not be written") from None

    def create_session(self, record: SessionRecord) -> None:
        with self._lock:
            if record.session_id in self._sessions:
                raise HarnessError("ledger-failed", "the session already exists")
            self._sessions[record.session_id] = record
            self._write(self._sessions_path, [json.dumps(record_to_dict(record)) + "\n"])

    def update_session(self, record: SessionRecord) -> None:
        with self._lock:
            self._sessions[record.session_id] = record
            self._write(self._sessions_path, [json.dumps(record_to_dict(record)) + "\n"])

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        records = sorted(self._sessions.values(), key=lambda r: r.created_at, reverse=True)
        return records[:limit] if limit is not None else records

    def append(self, events: Sequence[Event]) -> None:
        with self._lock:
            self._guard.check(events)
            self._buffer.extend(events)
            for event in events:
                self._events.setdefault(event.session_id, []).append(event)

    def flush(self) -> None:
        with self._lock:
            if not self._buffer:
                return
            lines = [dumps_event(event) + "\n" for event in self._buffer]
            self._buffer.clear()
            self._write(self._events_path, lines)

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        bucket = self._events.get(session_id, [])
        after = max(0, after)
        end = None if limit is None else after + max(0, limit)
        return bucket[after:end]

    def last_sequence(self, session_id: str) -> int:
        return len(self._events.get(session_id, ()))

    def close(self) -> None:
        self.flush()
