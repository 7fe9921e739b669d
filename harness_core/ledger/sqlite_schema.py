"""The SQLite ledger's schema: creation, migration, and the checks before anything writes.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`): ``events`` has one row per event with
the envelope in columns and the payload as compact JSON; ``UNIQUE(session_id, sequence)`` (the
primary key) and ``UNIQUE(event_id)``; triggers refuse ``UPDATE`` and ``DELETE``; ``claims`` says
who may write each session. A version-1 or -2 ledger is migrated in place on open.
"""

from __future__ import annotations

import sqlite3

from harness_hookspecs import HarnessError

SCHEMA_VERSION = 3

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

# Who may write a session (see ``SqliteStore.claim``): one row per session ever claimed; the
# epoch only grows, ``owner`` is NULL once released.
_CLAIMS = """
CREATE TABLE claims (
    session_id  TEXT PRIMARY KEY,
    epoch       INTEGER NOT NULL,
    owner       TEXT,
    renewed_at  REAL NOT NULL
);
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

EXPECTED_TABLES = {1: {"sessions", "events"}, 2: {"sessions", "events"}}
EXPECTED_TABLES[SCHEMA_VERSION] = {"sessions", "events", "claims"}


def connect(path: str, *, configure: bool = True) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=30000")
    if configure:
        use_wal(connection)
    return connection


def use_wal(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")  # durable for WAL: see the module docstring


def validate(connection: sqlite3.Connection) -> None:
    """Refuse a file that is not a harness ledger, or is damaged, before anything writes to it.

    Reads only: a foreign or corrupted file is left byte for byte as it was (no WAL switch, no
    migration). ``quick_check`` reads every page once (O(size), no index cross-check).
    """
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    tables = {
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if version == 0 and not tables:
        return  # a new, empty file: ours to create
    if version > SCHEMA_VERSION or version < 0:
        raise HarnessError(
            "ledger-failed",
            f"the ledger schema version {version} is newer than this harness-core "
            f"supports ({SCHEMA_VERSION})",
        )
    if not EXPECTED_TABLES.get(version, set()) <= tables or not tables <= {
        "sessions",
        "events",
        "claims",
    }:
        raise HarnessError("ledger-failed", "the SQLite file is not a harness ledger")
    if connection.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise HarnessError("ledger-failed", "the SQLite ledger is damaged")


def migrate(connection: sqlite3.Connection) -> None:
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
            script = _SESSIONS + _EVENTS + _CLAIMS
        elif version == 1:
            script = _MIGRATE_1_TO_2 + _CLAIMS
        elif version == 2:
            script = _CLAIMS
        else:
            script = ""
        for statement in _statements(script):
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def rollback(connection: sqlite3.Connection) -> None:
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
