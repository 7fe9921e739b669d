"""SQLite schema 5: event ids stay unique without an index over every event's id.

An event's own id (``<its session's prefix><sequence>``) is unique with its (session, sequence);
every other id is listed in ``event_ids`` by the ``events_listed`` trigger, and an id of the own
form that is not the event's own is refused. A version 4 ledger (every id indexed) is migrated.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import attrs
import pytest
from harness_hookspecs import HarnessError

from harness_core.digests import event_id_prefix
from harness_core.ledger.sqlite import SqliteStore
from harness_core.ledger.sqlite_schema import SqliteSchema
from harness_core.serialize import dumps_record

from .ledger_samples import make_event, make_record


def _own(sequence: int, session_id: str) -> object:
    event = make_event(sequence, session_id=session_id)
    return attrs.evolve(event, event_id=event_id_prefix(session_id) + str(sequence))


def _listed(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT event_id, session_id FROM event_ids ORDER BY 1")
        found = [tuple(row) for row in rows]
    connection.close()
    return found


def _raw_insert(path: Path, session_id: str, sequence: int, event_id: str) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(
            "INSERT INTO events VALUES (?, ?, ?, NULL, 'message.delta', 't', 'echo', NULL, 1, '{}')",
            (session_id, sequence, event_id),
        )
    finally:
        connection.close()


def test_own_ids_are_not_listed_and_other_ids_are(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.create_session(make_record("a"))
    store.append([_own(1, "a"), _own(2, "a"), make_event(3, session_id="a")])
    store.flush()
    assert [e.event_id for e in store.events("a")] == [
        event_id_prefix("a") + "1",
        event_id_prefix("a") + "2",
        "ev_a_3",
    ]
    store.close()
    assert _listed(path) == [("ev_a_3", "a")]


def test_an_id_another_session_has_is_refused_whoever_writes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    for session_id in ("a", "b"):
        store.create_session(make_record(session_id))
    store.append([_own(1, "a"), make_event(2, session_id="a")])
    store.flush()
    # through the store: the other session's own id, and its listed one
    store.append([attrs.evolve(make_event(1, session_id="b"), event_id=event_id_prefix("a") + "1")])
    with pytest.raises(HarnessError, match="duplicate sequence or event id"):
        store.flush()
    store.append([attrs.evolve(make_event(1, session_id="b"), event_id="ev_a_2")])
    with pytest.raises(HarnessError, match="duplicate sequence or event id"):
        store.flush()
    assert store.events("b") == []
    store.close()
    # with SQL, past the store: the database refuses both as well
    for event_id in (event_id_prefix("a") + "1", "ev_a_2"):
        with pytest.raises(sqlite3.IntegrityError):
            _raw_insert(path, "b", 1, event_id)
    # an id of the own form that is not the event's own is refused even when nobody has it
    with pytest.raises(sqlite3.IntegrityError, match="another event's form"):
        _raw_insert(path, "b", 1, "ev_0123456789abcdef_1")
    _raw_insert(path, "b", 1, "ev_b_1")  # a free id of another form goes in, listed
    assert _listed(path) == [("ev_a_2", "a"), ("ev_b_1", "b")]


def test_an_import_with_another_sessions_id_is_refused_whole(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.create_session(make_record("a"))
    store.append([_own(1, "a")])
    store.flush()
    taken = attrs.evolve(make_event(2, session_id="c"), event_id=event_id_prefix("a") + "1")
    with pytest.raises(HarnessError, match="an event id of the bundle is already in the ledger"):
        store.import_session(make_record("c"), [[_own(1, "c")], [taken]])
    assert store.get_session("c") is None and store.events("c") == []
    store.import_session(make_record("c"), [[_own(1, "c"), make_event(2, session_id="c")]])
    assert [e.sequence for e in store.events("c")] == [1, 2]
    store.close()
    assert _listed(path) == sorted([(event_id_prefix("c") + "1", "c"), ("ev_c_2", "c")])


def test_an_imported_session_keeps_its_bundles_ids_renumbered(tmp_path: Path) -> None:
    """A bundle's events may be renumbered (a SuperQode v1 export has no session.opened):
    their ids of its own prefix are kept, listed; another session's prefix is refused."""
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.create_session(make_record("a"))
    store.append([_own(1, "a")])
    store.flush()
    shifted = [
        attrs.evolve(make_event(n, session_id="d"), event_id=event_id_prefix("d") + str(n + 1))
        for n in (1, 2)
    ]
    store.import_session(make_record("d"), [shifted])
    assert [e.event_id for e in store.events("d")] == [e.event_id for e in shifted]
    store.close()
    assert _listed(path) == sorted((e.event_id, "d") for e in shifted)
    # the imported session's ids stay unique, even one that is its own at that sequence
    with pytest.raises(sqlite3.IntegrityError):
        _raw_insert(path, "d", 3, event_id_prefix("d") + "3")
    # and no imported session takes another's form: not a's, and not d's outside d
    store = SqliteStore(str(path))
    taken = attrs.evolve(make_event(1, session_id="e"), event_id=event_id_prefix("a") + "7")
    with pytest.raises(HarnessError, match="an event id of the bundle is already in the ledger"):
        store.import_session(make_record("e"), [[taken]])
    store.close()
    with pytest.raises(sqlite3.IntegrityError, match="another event's form"):
        _raw_insert(path, "e", 1, event_id_prefix("d") + "9")


# The version 4 tables as that version's code made them (every event id indexed).
_VERSION_4 = """
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, provider TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX sessions_created ON sessions (created_at);
CREATE TABLE events (session_id TEXT NOT NULL, sequence INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE, turn_id TEXT, type TEXT NOT NULL, timestamp TEXT NOT NULL,
    harness TEXT NOT NULL, parent_event_id TEXT, protocol_version INTEGER NOT NULL,
    payload TEXT NOT NULL, PRIMARY KEY (session_id, sequence)) WITHOUT ROWID;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TABLE claims (session_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, owner TEXT,
    renewed_at REAL NOT NULL);
CREATE TABLE pruned (session_id TEXT PRIMARY KEY, pruned_at TEXT NOT NULL,
    last_sequence INTEGER NOT NULL);
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    WHEN NOT EXISTS (SELECT 1 FROM pruned WHERE session_id = OLD.session_id)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
PRAGMA user_version=4;
"""


def _version_4_ledger(path: Path) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(_VERSION_4)
    connection.execute(
        "INSERT INTO sessions VALUES ('a', 'echo', 'open', 't0', 't0', ?)",
        (dumps_record(make_record("a")),),
    )
    rows = [
        ("a", 1, event_id_prefix("a") + "1"),
        ("a", 2, "imported-2"),
        ("a", 3, event_id_prefix("a") + "3"),
        ("orphan", 1, event_id_prefix("orphan") + "1"),  # events without a session row
        ("b", 1, event_id_prefix("a") + "9"),  # version 4 allowed another's form
    ]
    for session_id, sequence, event_id in rows:
        connection.execute(
            "INSERT INTO events VALUES (?, ?, ?, NULL, 'message.delta', 't', 'echo', NULL, 1, "
            '\'{"text":"x"}\')',
            (session_id, sequence, event_id),
        )
    stored = connection.execute("SELECT * FROM events ORDER BY session_id, sequence").fetchall()
    connection.close()
    return stored


def test_a_version_4_ledger_is_migrated_with_its_ids_still_unique(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    before = _version_4_ledger(path)
    schema = SqliteSchema(str(path))
    assert schema.pending()[0] == 4
    assert schema.migrate() == 4
    assert all(ok for _, ok in schema.check())
    with sqlite3.connect(path) as connection:
        after = connection.execute("SELECT * FROM events ORDER BY session_id, sequence").fetchall()
        prefixes = connection.execute("SELECT * FROM event_prefixes").fetchall()
        version = connection.execute("PRAGMA user_version").fetchone()[0]
    connection.close()
    assert (after, version) == (before, 5)
    assert prefixes == [("a", event_id_prefix("a"), 1)]  # it has an imported id: all listed
    # not their own: the imported id, the session-less events' ids, the other's form; and,
    # its session holding an imported id (all_listed), a's own ids too
    assert _listed(path) == sorted(
        [
            (event_id_prefix("a") + "1", "a"),
            (event_id_prefix("a") + "3", "a"),
            (event_id_prefix("a") + "9", "b"),
            (event_id_prefix("orphan") + "1", "orphan"),
            ("imported-2", "a"),
        ]
    )
    # an all_listed session may take ids of its prefix at any sequence, but not one it has
    with pytest.raises(sqlite3.IntegrityError):
        _raw_insert(path, "a", 4, event_id_prefix("a") + "1")
    _raw_insert(path, "a", 4, event_id_prefix("a") + "40")
    # still unique after the migration, own and listed ids alike
    for event_id in (event_id_prefix("a") + "1", "imported-2", event_id_prefix("a") + "9"):
        with pytest.raises(sqlite3.IntegrityError):
            _raw_insert(path, "c", 1, event_id)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connection = sqlite3.connect(path)
        try:
            connection.execute("DELETE FROM events WHERE session_id = 'a'")
        finally:
            connection.close()
