"""A JSONL file store: ``sessions.jsonl`` (last record wins) and ``events.jsonl`` in a directory.

One JSON object per line (``dumps_event``: the same shape as ``event_to_dict``). Appends are
checked (gap or duplicate sequence -> ``ledger-failed``), kept in memory and written to the file
at once (one ``write`` to an ``O_APPEND`` descriptor): when ``append`` returns the events survive
a crash of the process (:class:`CommitsOnAppend`); ``flush`` fsyncs, for an OS crash (the
controller flushes at every terminal event and at close). Session records are written and
fsynced at once. Opening the directory again (another process) reads everything back; a torn
last line (a process killed in the middle of a write: the kernel may stop a large write short)
is ignored, and the next append first closes it off with :data:`TORN` so that it never runs
into the next writer's line (readers skip it: it was never acknowledged). ``tail`` takes in
what other processes appended since (by file offset).

Claims: ``claims/<hash>.lock`` per session, held with ``flock`` while this store owns the
session (the kernel drops it when the process dies, so a crashed owner never blocks a
takeover); the file holds the last epoch. Claiming re-reads the session's events (another
process may have written them).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import dumps_event, dumps_record, loads_event, loads_record
from .base import SequenceGuard, SessionsInMemory, nth_event
from .tail import PAGE, poll_tail

T = TypeVar("T")

#: Appended to a torn last line before the next write: the line ends, and readers skip it (no
#: event or record line ends so: they end with ``}``).
TORN = "\ttorn"


class JsonlStore(SessionsInMemory):
    commits_on_append = True
    syncs_on_flush = True

    def __init__(self, directory: str) -> None:
        self.directory = directory
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError:
            raise HarnessError("ledger-failed", "the JSONL ledger directory is unusable") from None
        self._sessions_path = os.path.join(directory, "sessions.jsonl")
        self._events_path = os.path.join(directory, "events.jsonl")
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionRecord] = {}
        self._events: dict[str, list[Event]] = {}
        self._closed = False
        self._fd: int | None = None  # events.jsonl, O_APPEND, opened on the first append
        self._claims: dict[str, tuple[int, int]] = {}  # session -> (lock fd, epoch)
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
            if not line.strip() or line.endswith(TORN):
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

    def append(self, events: Sequence[Event]) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._lock:
            events = self._guard.check(events)
            if not events:
                return
            data = "".join([dumps_event(event) + "\n" for event in events]).encode()
            try:
                if self._fd is None:
                    self._fd = os.open(
                        self._events_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644
                    )
                if _torn(self._fd):  # a writer died mid-line: end that line first, marked
                    data = TORN.encode() + b"\n" + data
                written = os.write(self._fd, data)
                while written < len(data):  # a short write (rare): the rest, still appended
                    written += os.write(self._fd, data[written:])
            except OSError:
                raise HarnessError(
                    "ledger-failed", "the JSONL ledger could not be written"
                ) from None
            for event in events:
                self._events.setdefault(event.session_id, []).append(event)

    def flush(self) -> None:
        with self._lock:
            if self._fd is None:
                return
            try:
                os.fsync(self._fd)
            except OSError:
                raise HarnessError(
                    "ledger-failed", "the JSONL ledger could not be written"
                ) from None

    def claim(self, session_id: str) -> int:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        held = self._claims.get(session_id)
        if held is not None:
            return held[1]
        directory = os.path.join(self.directory, "claims")
        name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        try:
            os.makedirs(directory, exist_ok=True)
            fd = os.open(os.path.join(directory, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            raise HarnessError("ledger-failed", "the JSONL ledger could not be written") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise HarnessError("session-busy") from None
        try:
            text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            epoch = (int(text) if text.isdigit() else 0) + 1
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(epoch).encode(), 0)
            self._reload(session_id)
        except (OSError, HarnessError):
            os.close(fd)  # drops the lock
            raise HarnessError("ledger-failed", "the JSONL ledger could not be read") from None
        self._claims[session_id] = (fd, epoch)
        return epoch

    def _reload(self, session_id: str) -> None:
        """Take in the session's events another process wrote since this store read the file."""
        fresh = [e for e in _lines(self._events_path, loads_event) if e.session_id == session_id]
        with self._lock:
            for expected, event in enumerate(fresh, 1):
                if event.sequence != expected:
                    raise HarnessError("ledger-failed", "the JSONL ledger has a sequence gap")
            self._events[session_id] = fresh
            self._guard.reset(session_id, len(fresh))

    def release(self, session_id: str) -> None:
        held = self._claims.pop(session_id, None)
        if held is not None:
            os.close(held[0])  # closing the descriptor drops the flock

    def claimed(self, session_id: str) -> bool:
        if session_id in self._claims:
            return True
        name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        try:
            fd = os.open(os.path.join(self.directory, "claims", name + ".lock"), os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except OSError:
            return True
        finally:
            os.close(fd)

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
            for session_id in list(self._claims):
                self.release(session_id)
            if self._fd is not None:
                os.close(self._fd)
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
    return [parse(line) for line in lines if line.strip() and not line.endswith(TORN)]


def _torn(fd: int) -> bool:
    """Whether the file behind ``fd`` ends inside a line (a writer was killed mid-write)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
