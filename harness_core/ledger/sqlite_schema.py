"""The SQLite ledger's schema: creation, migration, and the checks before anything writes.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`): ``events`` has one row per event with
the envelope in columns and the payload as compact JSON, in the order they were written, and
``UNIQUE(session_id, sequence)`` (the primary key); triggers refuse ``UPDATE`` and ``DELETE``;
``event_ids`` keeps event ids unique (see below); ``claims`` says who may write each session;
``pruned`` lists the sessions ``harness ledger prune`` archived and removed, the only rows the
delete trigger lets go. A ledger of an older version is migrated in place on open (or by
``harness ledger migrate``).

Event ids are unique without an index over every event's id (it cost two more B-tree pages per
event when many sessions write at once: ``benchmarks/sqlite_layout.py``). The id a controller
gives an event is its *own id*, ``<the session's prefix><sequence>``, the prefix
``ev_<16 hex of SHA-1(session id)>_`` (:func:`harness_core.digests.event_id_prefix`), kept in
``event_prefixes`` (unique) when the session is created: an own id is unique with its
``(session_id, sequence)``. The trigger ``events_listed`` lists every other id in ``event_ids``,
whose primary key keeps it unique, and refuses an id of the own form whose prefix is another
session's or, in a session the controller writes, that is not the event's own (it could be the
own id of another event). An imported session's ids are its bundle's, which may have
renumbered its events: it is created ``all_listed``, every id of it listed. So the database
itself keeps every id unique, whoever writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

from harness_hookspecs import HarnessError

from ..digests import event_id_prefix

SCHEMA_VERSION = 5

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

# Up to version 4 the table was clustered by (session_id, sequence) and every event id indexed.
_EVENTS_V4 = """
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
"""

# Rows go at the table's end in the order they are written; only the primary key's index is
# kept per event (see the module docstring for the ids).
_EVENTS = """
CREATE TABLE events (
    session_id        TEXT NOT NULL,
    sequence          INTEGER NOT NULL,
    event_id          TEXT NOT NULL,
    turn_id           TEXT,
    type              TEXT NOT NULL,
    timestamp         TEXT NOT NULL,
    harness           TEXT NOT NULL,
    parent_event_id   TEXT,
    protocol_version  INTEGER NOT NULL,
    payload           TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
);
CREATE TABLE event_prefixes (
    session_id  TEXT PRIMARY KEY,
    prefix      TEXT NOT NULL UNIQUE,
    all_listed  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE event_ids (
    event_id    TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX event_ids_session ON event_ids (session_id);
"""

_NO_UPDATE = """
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""

# An id that is not the event's own is listed. One of the own form (`ev_`, 16 hex digits, `_`, a
# digit: the GLOB) is refused unless its session is all_listed and the prefix is that session's
# own. RAISE(ABORT) is a constraint error, like a duplicate id.
_LISTED = (
    """
CREATE TRIGGER events_listed BEFORE INSERT ON events
    WHEN NEW.event_id IS NOT (SELECT prefix FROM event_prefixes
        WHERE session_id = NEW.session_id AND NOT all_listed) || NEW.sequence
    BEGIN
        SELECT RAISE(ABORT, 'an event id of another event''s form')
            WHERE NEW.event_id GLOB 'ev_"""
    + "[0-9a-f]" * 16
    + """_[0-9]*'
            AND substr(NEW.event_id, 1, 20) IS NOT (SELECT prefix FROM event_prefixes
                WHERE session_id = NEW.session_id AND all_listed);
        INSERT INTO event_ids VALUES (NEW.event_id, NEW.session_id);
    END;
"""
)

# A row may go only once its session is listed in ``pruned`` (archived first, closed, no live
# writer: see ``SqliteStore.prune_session``); everything else stays append-only.
_PRUNED_TABLE = """
CREATE TABLE pruned (
    session_id     TEXT PRIMARY KEY,
    pruned_at      TEXT NOT NULL,
    last_sequence  INTEGER NOT NULL
);
"""
_NO_DELETE = """
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    WHEN NOT EXISTS (SELECT 1 FROM pruned WHERE session_id = OLD.session_id)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""
_PRUNED = _PRUNED_TABLE + _NO_DELETE

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
    + _EVENTS_V4
    + _NO_UPDATE
    + """
INSERT INTO events SELECT session_id, sequence, event_id, turn_id, type, timestamp,
    json_extract(body, '$.harness'), json_extract(body, '$.parent_event_id'),
    coalesce(json_extract(body, '$.protocol_version'), 1), json_extract(body, '$.payload')
    FROM events_v1;
DROP TABLE events_v1;
"""
)

# Version 3 refused every delete.
_MIGRATE_3_TO_4 = "DROP TRIGGER events_no_delete;" + _PRUNED

# Version 4 indexed every event id: rows now in the order written, the ids that are not their
# event's own listed (those of the own form too: version 4 allowed them), and a session with
# such an id all_listed (an imported one), its own ids then listed too: an all_listed session's
# ids are all in event_ids, so a later one of its prefix cannot repeat one of them. The renamed
# table takes its triggers along, and drops them with it: they are made anew.
_MIGRATE_4_TO_5 = (
    "ALTER TABLE events RENAME TO events_v4;"
    + _EVENTS
    + """
INSERT INTO event_prefixes SELECT session_id, harness_event_prefix(session_id), 0 FROM sessions;
INSERT INTO events SELECT * FROM events_v4 ORDER BY session_id, sequence;
INSERT INTO event_ids SELECT e.event_id, e.session_id FROM events_v4 AS e
    LEFT JOIN event_prefixes AS p ON p.session_id = e.session_id
    WHERE e.event_id IS NOT p.prefix || e.sequence;
UPDATE event_prefixes SET all_listed = 1 WHERE session_id IN (SELECT session_id FROM event_ids);
INSERT INTO event_ids SELECT e.event_id, e.session_id FROM events_v4 AS e
    JOIN event_prefixes AS p ON p.session_id = e.session_id
    WHERE p.all_listed AND e.event_id = p.prefix || e.sequence;
DROP TABLE events_v4;
"""
    + _NO_UPDATE
    + _NO_DELETE
    + _LISTED
)

#: The script that brings a ledger of each version to :data:`SCHEMA_VERSION` (0: a new file).
_UPGRADES = {
    0: _SESSIONS + _EVENTS + _NO_UPDATE + _LISTED + _CLAIMS + _PRUNED,
    1: _MIGRATE_1_TO_2 + _CLAIMS + _PRUNED_TABLE + _MIGRATE_4_TO_5,
    2: _CLAIMS + _MIGRATE_3_TO_4 + _MIGRATE_4_TO_5,
    3: _MIGRATE_3_TO_4 + _MIGRATE_4_TO_5,
    4: _MIGRATE_4_TO_5,
    SCHEMA_VERSION: "",
}

EXPECTED_TABLES = {1: {"sessions", "events"}, 2: {"sessions", "events"}}
EXPECTED_TABLES[3] = {"sessions", "events", "claims"}
EXPECTED_TABLES[4] = {"sessions", "events", "claims", "pruned"}
EXPECTED_TABLES[SCHEMA_VERSION] = EXPECTED_TABLES[4] | {"event_prefixes", "event_ids"}
ALL_TABLES = EXPECTED_TABLES[SCHEMA_VERSION]


def unopened(path: str, why: str = "") -> HarnessError:
    """``ledger-failed`` for a SQLite ledger that could not be opened, naming its file (the
    path's last 200 characters) and, when known, a fixed ``why``."""
    shown = os.path.abspath(path)[-200:]
    return HarnessError("ledger-failed", f"the SQLite ledger {shown} could not be opened{why}")


def connect(path: str, *, configure: bool = True) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=30000")
    if configure:
        use_wal(connection)
    return connection


def use_wal(connection: sqlite3.Connection) -> None:
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")  # durable for WAL: see the module docstring


def validate(connection: sqlite3.Connection, *, quick_check: bool = True) -> None:
    """Refuse a file that is not a harness ledger, or is damaged, before anything writes to it.

    Reads only: a foreign or corrupted file is left byte for byte as it was (no WAL switch, no
    migration). ``quick_check`` reads every page once (O(size), no index cross-check); it is
    skipped when the file is as a store left it after its clean close (:func:`unchanged`).
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
    if not EXPECTED_TABLES.get(version, set()) <= tables or not tables <= ALL_TABLES:
        raise HarnessError("ledger-failed", "the SQLite file is not a harness ledger")
    if quick_check and connection.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise HarnessError("ledger-failed", "the SQLite ledger is damaged")


# A ledger of 100,000 sessions is hundreds of MB: checking every page on every open made each
# `harness run` pay for the whole history. A store that closes cleanly writes down how it left
# the file (device, inode, size, mtime of the file and of its -wal); a file found exactly so was
# touched by nobody since, and is not read whole again. Any other write (another process, a
# crash, a byte changed by hand) changes the stat, and the next open checks every page.
CHECKED_SUFFIX = "-checked"


def _stat(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns]


def _left_as(path: str) -> dict[str, Any]:
    return {"file": _stat(path), "wal": _stat(path + "-wal")}


def unchanged(path: str) -> bool:
    """Whether ``path`` is exactly as a store left it after a clean close (see above)."""
    try:
        with open(path + CHECKED_SUFFIX, encoding="utf-8") as handle:
            left = json.load(handle)
    except (OSError, ValueError):
        return False
    return bool(left.get("file")) and left == _left_as(path)


def remember_clean(path: str) -> None:
    """After a clean close: how the file was left (a failed write only costs a check)."""
    marker = path + CHECKED_SUFFIX
    try:
        with open(marker + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(_left_as(path), handle)
        os.replace(marker + ".tmp", marker)
    except OSError:
        pass


def forget_clean(path: str) -> None:
    """After a failed write: whatever the file looks like, the next open checks it whole."""
    try:
        os.unlink(path + CHECKED_SUFFIX)
    except OSError:
        pass


def migrate(connection: sqlite3.Connection) -> int:
    """Create or upgrade the schema (one transaction); the version found before."""
    version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    if version == SCHEMA_VERSION:
        return version
    # (the 4 -> 5 step computes the sessions' event id prefixes)
    connection.create_function("harness_event_prefix", 1, event_id_prefix, deterministic=True)
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
        for statement in pending(version):
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return int(version)


def check(connection: sqlite3.Connection) -> list[tuple[str, bool]]:
    """What ``harness ledger check`` reports on a SQLite ledger: (what, whether it holds)."""
    version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    found = [
        (f"schema version {version} (this store: {SCHEMA_VERSION})", version == SCHEMA_VERSION)
    ]
    if version == 0:
        return found
    triggers = {
        row[0]
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    for trigger in ("events_no_update", "events_no_delete"):
        found.append((f"trigger {trigger} (append-only)", trigger in triggers))
    if version >= 5:
        found.append(("trigger events_listed (unique event ids)", "events_listed" in triggers))
    return found


def pending(version: int) -> list[str]:
    """The statements that bring a ledger at ``version`` to :data:`SCHEMA_VERSION` (what
    ``harness ledger migrate --dry-run`` prints)."""
    return _statements(_UPGRADES[version])


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


class SqliteSchema:
    """The SQLite ledger's :class:`~harness_core.ledger.LedgerSchema` (the file at ``path``;
    a missing file is an empty ledger, created by ``migrate``)."""

    version = SCHEMA_VERSION

    def __init__(self, path: str) -> None:
        self.path = path

    def _open(self, *, create: bool) -> sqlite3.Connection:
        import os

        if not create and not os.path.exists(self.path):
            return sqlite3.connect(":memory:")
        try:
            if create:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            connection = connect(self.path, configure=False)
            validate(connection)
        except (OSError, sqlite3.Error):
            raise unopened(self.path) from None
        return connection

    def pending(self) -> tuple[int, list[str]]:
        connection = self._open(create=False)
        try:
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])
        finally:
            connection.close()
        return version, [" ".join(s.split()).rstrip(";") for s in pending(version)]

    def migrate(self) -> int:
        connection = self._open(create=True)
        try:
            use_wal(connection)
            return migrate(connection)
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be written") from None
        finally:
            connection.close()

    def check(self) -> list[tuple[str, bool]]:
        connection = self._open(create=False)
        try:
            return check(connection)
        finally:
            connection.close()
