"""The embedded default ledger: SQLite, append-only, one row per event.

Writes never block the event loop: ``append`` checks the sequence and enqueues; a dedicated
writer thread serializes and commits whatever has queued up in one transaction per batch.
``flush`` waits until everything appended before it is committed. WAL with
``synchronous=NORMAL``: a commit survives a crash of the process; the last transactions may be
lost only on power loss (the WAL trade-off SQLite documents), which we accept for throughput.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import event_to_dict, loads_event, record_from_dict, record_to_dict
from ._base import SequenceGuard

SCHEMA_VERSION = 1
#: Session records written through this store kept for get_session (most recent first out).
RECORD_CACHE = 4096

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id  TEXT PRIMARY KEY,
    provider    TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    record      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session_id  TEXT NOT NULL,
    sequence    INTEGER NOT NULL,
    event_id    TEXT NOT NULL UNIQUE,
    turn_id     TEXT,
    type        TEXT NOT NULL,
    timestamp   TEXT NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_created ON sessions (created_at);
"""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class _Notify:
    """A flush waiter that calls back (on the writer thread) instead of waking a thread."""

    __slots__ = ("set",)

    def __init__(self, callback: Callable[[], object]) -> None:
        self.set = callback


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("PRAGMA busy_timeout=30000")
    return connection


class SqliteStore:
    def __init__(self, path: str) -> None:
        self.path = path
        parent = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(parent, exist_ok=True)
            self._reader = _connect(path)
            self._migrate(self._reader)
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be opened") from None
        self._read_lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._failure: str | None = None
        self._guard = SequenceGuard(self._stored_last)
        self._append_lock = threading.Lock()
        self._created: set[str] = set()
        self._records: OrderedDict[str, SessionRecord] = OrderedDict()
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="harness-ledger", daemon=True)
        self._writer.start()

    # -- schema -----------------------------------------------------------------------------

    def _migrate(self, connection: sqlite3.Connection) -> None:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HarnessError("ledger-failed", "the ledger was written by a newer harness-core")
        if version == 0:
            connection.executescript(
                "BEGIN;" + SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION};COMMIT;"
            )

    # -- writes -----------------------------------------------------------------------------

    def _stored_last(self, session_id: str) -> int:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT MAX(sequence) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(row[0] or 0)

    def append(self, events: Sequence[Event]) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            self._guard.check(events)
            self._queue.put(events)

    def create_session(self, record: SessionRecord) -> None:
        # A duplicate is refused here, without waiting for the writer: ids this store created
        # are remembered, older ones are looked up (no flush: our queue cannot hold them).
        with self._append_lock:
            session_id = record.session_id
            if session_id in self._created or self._stored_session(session_id):
                raise HarnessError("ledger-failed", "the session already exists")
            self._created.add(session_id)
            self._guard.seed(session_id, 0)  # a new session has no events: no MAX() query
            self._remember(record)
            self._queue.put(("session", record, False))

    def update_session(self, record: SessionRecord) -> None:
        with self._append_lock:
            self._remember(record)
            self._queue.put(("session", record, True))

    def _remember(self, record: SessionRecord) -> None:
        records = self._records
        records[record.session_id] = record
        records.move_to_end(record.session_id)
        if len(records) > RECORD_CACHE:
            records.popitem(last=False)

    def _stored_session(self, session_id: str) -> bool:
        with self._read_lock:
            row = self._reader.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        return row is not None

    def flush(self) -> None:
        if self._closed:
            return
        done = threading.Event()
        self._queue.put(done)
        done.wait()
        self._raise_failure()

    def flush_notify(self, callback: Callable[[], object]) -> bool:
        """Like :meth:`flush` without blocking: ``callback()`` runs on the writer thread once
        everything appended before now is committed; then call :meth:`raise_failure`.

        Returns ``False`` (and never calls back) when there is nothing to wait for.
        """
        if self._closed:
            return False
        self._queue.put(_Notify(callback))
        return True

    def raise_failure(self) -> None:
        """Raise the writer's first failure since the last flush, if any."""
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise HarnessError("ledger-failed", failure)

    def _write_loop(self) -> None:
        connection = _connect(self.path)
        get = self._queue.get
        get_nowait = self._queue.get_nowait
        while True:
            items = [get()]
            try:
                while len(items) < 4096:
                    items.append(get_nowait())
            except queue.Empty:
                pass
            rows: list[tuple[Any, ...]] = []
            sessions: list[tuple[SessionRecord, bool]] = []
            waiters: list[threading.Event | _Notify] = []
            stop = False
            for item in items:
                if isinstance(item, threading.Event | _Notify):
                    waiters.append(item)
                elif item is None:
                    stop = True
                elif isinstance(item, tuple) and item and item[0] == "session":
                    sessions.append((item[1], item[2]))
                else:
                    for event in item:
                        rows.append(
                            (
                                event.session_id,
                                event.sequence,
                                event.event_id,
                                event.turn_id,
                                event.type,
                                event.timestamp,
                                _dumps(event_to_dict(event)),
                            )
                        )
            if rows or sessions:
                self._commit(connection, rows, sessions)
                for record, upsert in sessions:
                    if not upsert:  # committed (or refused): the table now answers for it
                        self._created.discard(record.session_id)
            for waiter in waiters:
                waiter.set()
            if stop:
                connection.close()
                return

    def _commit(
        self,
        connection: sqlite3.Connection,
        rows: list[tuple[Any, ...]],
        sessions: list[tuple[SessionRecord, bool]],
    ) -> None:
        try:
            connection.execute("BEGIN")
            self._write_sessions(connection, sessions)
            connection.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            connection.execute("COMMIT")
        except sqlite3.Error:
            connection.execute("ROLLBACK")
            # Keep every good row: retry one by one and report the first failure.
            self._failure = "an event could not be stored (duplicate or unwritable)"
            for record, upsert in sessions:
                try:
                    self._write_sessions(connection, [(record, upsert)])
                except sqlite3.Error:
                    pass
            for row in rows:
                try:
                    connection.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", row)
                except sqlite3.Error:
                    pass

    def _write_sessions(
        self, connection: sqlite3.Connection, sessions: list[tuple[SessionRecord, bool]]
    ) -> None:
        for record, upsert in sessions:
            values = (
                record.session_id,
                record.ref.provider,
                record.status,
                record.created_at,
                record.updated_at,
                _dumps(record_to_dict(record)),
            )
            if upsert:
                connection.execute(
                    "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO "
                    "UPDATE SET status=excluded.status, updated_at=excluded.updated_at, "
                    "record=excluded.record",
                    values,
                )
            else:
                connection.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", values)

    # -- reads ------------------------------------------------------------------------------

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        self.flush()
        try:
            with self._read_lock:
                return self._reader.execute(sql, args).fetchall()
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None

    def get_session(self, session_id: str) -> SessionRecord | None:
        # What this store wrote last is what the writer commits (records are immutable).
        known = self._records.get(session_id)
        if known is not None:
            return known
        rows = self._read("SELECT record FROM sessions WHERE session_id = ?", (session_id,))
        return record_from_dict(json.loads(rows[0][0])) if rows else None

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        rows = self._read(
            "SELECT record FROM sessions ORDER BY created_at DESC LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [record_from_dict(json.loads(row[0])) for row in rows]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        rows = self._read(
            "SELECT body FROM events WHERE session_id = ? AND sequence > ? "
            "ORDER BY sequence LIMIT ?",
            (session_id, after, -1 if limit is None else limit),
        )
        return [loads_event(row[0]) for row in rows]

    def last_sequence(self, session_id: str) -> int:
        known = self._guard.last(session_id)
        return known if known is not None else self._stored_last(session_id)

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._queue.put(None)
        self._writer.join(timeout=30)
        with self._read_lock:
            self._reader.close()
