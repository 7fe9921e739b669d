"""The embedded default ledger: SQLite, append-only, one row per event.

Writes never block the event loop: ``append`` checks the sequence (gap or duplicate ->
``ledger-failed``) and enqueues; a dedicated writer thread serializes the payloads and commits
whatever has queued up with one ``executemany`` in one transaction per batch. ``flush`` blocks
until everything appended before it is committed and re-raises a writer failure as
``ledger-failed``. Reads use their own connection (behind a lock) after a flush, so a reader
sees its own writes; the store is safe to share between threads.

Durability: WAL with ``synchronous=NORMAL``. In WAL mode a committed transaction survives a crash
of the process (the WAL is written before ``COMMIT`` returns); only an OS crash or power loss may
lose the last transactions before the next checkpoint syncs them (the trade-off SQLite
documents). That is what "durable" means for this store, and it is what buys the throughput:
``synchronous=FULL`` would fsync every batch.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`): ``events`` has one row per event with
the envelope in columns and the payload as compact JSON; ``UNIQUE(session_id, sequence)`` (the
primary key) and ``UNIQUE(event_id)``; triggers refuse ``UPDATE`` and ``DELETE``. A ledger from a
newer harness-core (or a database that isn't a ledger) is refused with ``ledger-failed``; a
version-1 ledger (the envelope as one JSON ``body``) is migrated in place on open.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import loads_record
from ._base import (
    STOP,
    QueuedWrites,
    RecentRecords,
    SequenceGuard,
    Waiter,
    event_from_row,
    event_row,
    record_row,
)

SCHEMA_VERSION = 2
#: Session records written through this store kept for get_session (most recent first out).
RECORD_CACHE = 4096
#: Queue items the writer takes into one transaction at most.
BATCH_ITEMS = 8192

_SESSIONS = """
CREATE TABLE sessions (
    session_id  TEXT PRIMARY KEY,
    provider    TEXT NOT NULL,
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    record      TEXT NOT NULL
);
CREATE INDEX sessions_created ON sessions (created_at);
"""

_EVENTS = """
CREATE TABLE events (
    session_id        TEXT NOT NULL,
    sequence          INTEGER NOT NULL,
    event_id          TEXT NOT NULL UNIQUE,
    turn_id           TEXT,
    type              TEXT NOT NULL,
    timestamp         TEXT NOT NULL,
    harness           TEXT NOT NULL,
    parent_event_id   TEXT,
    protocol_version  INTEGER NOT NULL,
    payload           TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""

# Version 1 kept the whole envelope as JSON in ``body``; move it into columns.
_MIGRATE_1_TO_2 = (
    "ALTER TABLE events RENAME TO events_v1;"
    + _EVENTS
    + """
INSERT INTO events SELECT session_id, sequence, event_id, turn_id, type, timestamp,
    json_extract(body, '$.harness'), json_extract(body, '$.parent_event_id'),
    coalesce(json_extract(body, '$.protocol_version'), 1), json_extract(body, '$.payload')
    FROM events_v1;
DROP TABLE events_v1;
"""
)

_INSERT_EVENT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_SELECT_EVENTS = (
    "SELECT session_id, sequence, event_id, turn_id, type, timestamp, harness, "
    "parent_event_id, protocol_version, payload FROM events "
    "WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
)


class _Session:
    __slots__ = ("record", "upsert")

    def __init__(self, record: SessionRecord, upsert: bool) -> None:
        self.record = record
        self.upsert = upsert


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=30000")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")  # durable for WAL: see the module docstring
    return connection


class SqliteStore(QueuedWrites):
    """The SQLite ledger at ``path`` (created with its directory when missing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be opened") from None
        reader: sqlite3.Connection | None = None
        writer: sqlite3.Connection | None = None
        try:
            reader = _connect(path)
            self._migrate(reader)
            writer = _connect(path)
        except sqlite3.Error:
            for connection in (reader, writer):
                if connection is not None:
                    connection.close()
            raise HarnessError("ledger-failed", "the SQLite ledger could not be opened") from None
        except HarnessError:
            reader.close()  # type: ignore[union-attr]
            raise
        self._reader = reader
        self._writer_connection = writer
        self._read_lock = threading.Lock()
        QueuedWrites.__init__(self)
        self._guard = SequenceGuard(self._stored_last, self._stored_event, self._refreshed_last)
        self._append_lock = threading.Lock()
        self._created: set[str] = set()
        self._records = RecentRecords(RECORD_CACHE)
        self._closed = False
        self._writer = threading.Thread(target=self._write_loop, name="harness-ledger", daemon=True)
        self._writer.start()

    # -- schema -----------------------------------------------------------------------------

    @staticmethod
    def _migrate(connection: sqlite3.Connection) -> None:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        connection.execute("BEGIN IMMEDIATE")  # one process creates or migrates; others wait
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION or version < 0:
                raise HarnessError(
                    "ledger-failed",
                    f"the ledger schema version {version} is newer than this harness-core "
                    f"supports ({SCHEMA_VERSION})",
                )
            if version == 0:
                tables = connection.execute(
                    "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
                ).fetchone()[0]
                if tables:
                    raise HarnessError("ledger-failed", "the SQLite file is not a harness ledger")
                script = _SESSIONS + _EVENTS
            elif version == 1:
                script = _MIGRATE_1_TO_2
            else:
                script = ""
            for statement in _statements(script):
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    # -- writes -----------------------------------------------------------------------------

    def _stored_last(self, session_id: str) -> int:
        try:
            with self._read_lock:
                row = self._reader.execute(
                    "SELECT MAX(sequence) FROM events WHERE session_id = ?", (session_id,)
                ).fetchone()
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None
        return int(row[0] or 0)

    def _refreshed_last(self, session_id: str) -> int:
        self.flush()
        return self._stored_last(session_id)

    def _stored_event(self, session_id: str, sequence: int) -> Event | None:
        found = self.events(session_id, after=sequence - 1, limit=1)  # flushes first
        return found[0] if found and found[0].sequence == sequence else None

    def append(self, events: Sequence[Event]) -> None:
        """Check the sequence and enqueue; the writer thread serializes and commits."""
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            events = self._guard.check(events)
            if events:
                self._queue.put(events)

    def create_session(self, record: SessionRecord) -> None:
        # A duplicate is refused here, without waiting for the writer: ids this store created
        # are remembered, older ones are looked up (no flush: our queue cannot hold them).
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            session_id = record.session_id
            if session_id in self._created or self._stored_session(session_id):
                raise HarnessError("ledger-failed", "the session already exists")
            self._created.add(session_id)
            self._guard.seed(session_id, 0)  # a new session has no events: no MAX() query
            self._records.remember(record)
            self._queue.put(_Session(record, False))

    def update_session(self, record: SessionRecord) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            self._records.remember(record)
            self._queue.put(_Session(record, True))

    def _stored_session(self, session_id: str) -> bool:
        try:
            with self._read_lock:
                row = self._reader.execute(
                    "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
                ).fetchone()
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None
        return row is not None

    def _write_loop(self) -> None:
        connection = self._writer_connection
        while True:
            items = self._next_batch(BATCH_ITEMS)
            rows: list[tuple[Any, ...]] = []
            sessions: list[_Session] = []
            waiters: list[Waiter] = []
            stop = False
            try:
                for item in items:
                    kind = type(item)
                    if kind is Waiter:
                        waiters.append(item)
                    elif kind is _Session:
                        sessions.append(item)
                    elif item is STOP:
                        stop = True
                    else:  # a sequence of events
                        rows += [event_row(e) for e in item]
                if rows or sessions:
                    self._commit(connection, rows, sessions)
            except BaseException:  # never die with waiters blocked: report at the next flush
                self._fail("the SQLite writer failed")
            finally:
                for session in sessions:
                    if not session.upsert:  # committed (or refused): the table now answers
                        self._created.discard(session.record.session_id)
                self._release(waiters)
            if stop:
                connection.close()
                return

    def _commit(
        self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]], sessions: list[_Session]
    ) -> None:
        try:
            connection.execute("BEGIN")
            for session in sessions:
                self._write_session(connection, session)
            connection.executemany(_INSERT_EVENT, rows)
            connection.execute("COMMIT")
            return
        except (sqlite3.Error, ValueError):  # ValueError: a str SQLite can't encode
            _rollback(connection)
        # Keep every good row: redo the batch one statement at a time in one transaction
        # (a refused statement doesn't end the transaction) and report the first failure.
        try:
            connection.execute("BEGIN")
            for session in sessions:
                try:
                    self._write_session(connection, session)
                except (sqlite3.Error, ValueError):
                    self._fail("a session could not be stored (duplicate or unwritable)")
            for row in rows:
                try:
                    connection.execute(_INSERT_EVENT, row)
                except (sqlite3.Error, ValueError):
                    self._fail("an event could not be stored (duplicate sequence or event id)")
            connection.execute("COMMIT")
        except sqlite3.Error:
            _rollback(connection)
            self._fail("the SQLite ledger could not be written")

    @staticmethod
    def _write_session(connection: sqlite3.Connection, session: _Session) -> None:
        values = record_row(session.record)
        if session.upsert:
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
        return loads_record(rows[0][0]) if rows else None

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        rows = self._read(
            "SELECT record FROM sessions ORDER BY created_at DESC, session_id LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [loads_record(row[0]) for row in rows]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Events with ``sequence > after`` in order, at most ``limit`` of them."""
        rows = self._read(_SELECT_EVENTS, (session_id, after, -1 if limit is None else limit))
        return [event_from_row(row) for row in rows]

    def last_sequence(self, session_id: str) -> int:
        known = self._guard.last(session_id)
        return known if known is not None else self._stored_last(session_id)

    def _close_readers(self) -> None:
        with self._read_lock:
            self._reader.close()


def _rollback(connection: sqlite3.Connection) -> None:
    try:
        connection.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # SQLite already rolled back


def _statements(script: str) -> list[str]:
    """Split a schema script into statements (``executescript`` would commit our transaction)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]
