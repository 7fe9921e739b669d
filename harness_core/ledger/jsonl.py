"""A JSONL file store: ``sessions.jsonl`` (last record wins) and ``events.jsonl`` in a directory.

One JSON object per line (``dumps_event``: the same shape as ``event_to_dict``). Appends are
checked (gap or duplicate sequence -> ``ledger-failed``), kept in memory and buffered; ``flush``
writes the buffer with one ``write`` and fsyncs it (the controller flushes at every terminal
event and at close). Session records are written and fsynced at once. Opening the directory
again (another process) reads everything back; a torn last line (a crash in the middle of a
write, so never flushed) is ignored. One process writes a directory at a time; others may
read it, and ``tail`` takes in what the writer appended since (by file offset).
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import dumps_event, dumps_record, loads_event, loads_record
from ._base import SequenceGuard, nth_event
from .tail import PAGE, poll_tail

T = TypeVar("T")


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
        self._closed = False
        self._offset = 0  # bytes of events.jsonl taken in (complete lines only)
        self._load()
        self._guard = SequenceGuard(
            lambda sid: len(self._events.get(sid, ())),
            lambda sid, seq: nth_event(self._events, sid, seq),
        )

    def _load(self) -> None:
        for record in _lines(self._sessions_path, loads_record):
            self._sessions[record.session_id] = record
        self._take_in(strict=True)

    def _take_in(self, *, strict: bool) -> None:
        """Read events.jsonl past ``_offset``; a torn last line stays for the next read.

        ``strict`` (opening): every line must continue its session. Later (``tail``), lines
        this store already holds (its own writes) are skipped.
        """
        try:
            with open(self._events_path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        except OSError:
            raise HarnessError("ledger-failed", "the JSONL ledger could not be read") from None
        end = data.rfind(b"\n") + 1
        try:
            lines = data[:end].decode("utf-8").split("\n")
        except UnicodeDecodeError:
            raise HarnessError("ledger-failed", "the JSONL ledger could not be read") from None
        for line in lines:
            if not line.strip():
                continue
            event = loads_event(line)
            bucket = self._events.setdefault(event.session_id, [])
            if event.sequence == len(bucket) + 1:
                bucket.append(event)
            elif strict or event.sequence > len(bucket):
                raise HarnessError("ledger-failed", "the JSONL ledger has a sequence gap")
        self._offset += end

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
            self._write(self._sessions_path, [dumps_record(record) + "\n"])

    def update_session(self, record: SessionRecord) -> None:
        with self._lock:
            self._sessions[record.session_id] = record
            self._write(self._sessions_path, [dumps_record(record) + "\n"])

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        records = sorted(self._sessions.values(), key=lambda r: r.created_at, reverse=True)
        return records[:limit] if limit is not None else records

    def append(self, events: Sequence[Event]) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._lock:
            events = self._guard.check(events)
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

    def tail(self, session_id: str, *, after: int = 0) -> AsyncIterator[Event]:
        """New events of ``session_id``, including what another process appends to the file."""

        def read(last: int) -> list[Event]:
            with self._lock:
                self._take_in(strict=False)
            return self.events(session_id, after=last, limit=PAGE)

        return poll_tail(read, after=after)

    def close(self) -> None:
        if not self._closed:
            self.flush()
            self._closed = True


def _lines(path: str, parse: Callable[[str], T]) -> list[T]:
    """Parse every line of ``path``; a last line without its newline is a torn write: skipped."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        raise HarnessError("ledger-failed", "the JSONL ledger could not be read") from None
    lines = text.split("\n")
    lines.pop()  # "" after the last newline, or the torn tail
    return [parse(line) for line in lines if line.strip()]
