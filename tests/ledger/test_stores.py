"""Every store (memory, JSONL, SQLite, PostgreSQL) behind the same LedgerStore contract.

PostgreSQL runs on a real throwaway server (the ``postgresql_ledger_url`` fixture of
``harnessplane-ledger-postgresql``); without one, its cases skip with the reason.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
from harness_hookspecs import HarnessError, LedgerStore
from harness_hookspecs.events import MessageDelta

from harness_core.ledger import (
    BUILTIN_SCHEMES,
    DEFAULT_LEDGER_URL,
    ENV_LEDGER,
    MemoryStore,
    open_ledger,
    path_of,
)
from harness_core.ledger.sqlite import SCHEMA_VERSION, SqliteStore
from harness_core.plugins import get_plugins

from ..helpers import ROOT
from .ledger_samples import DURABLE, KINDS, SAMPLES, make_event, make_record, open_store, url_for


def test_round_trip_of_every_payload_type(store: LedgerStore) -> None:
    store.create_session(make_record())
    events = [make_event(i, payload) for i, payload in enumerate(SAMPLES, start=1)]
    for event in events:
        store.append((event,))
    store.flush()
    assert store.events("sess-1") == events
    assert store.last_sequence("sess-1") == len(events)
    assert store.get_session("sess-1") == make_record()


def test_paging_with_after_and_limit(store: LedgerStore) -> None:
    store.append([make_event(i) for i in range(1, 11)])
    assert [e.sequence for e in store.events("sess-1", after=7)] == [8, 9, 10]
    assert [e.sequence for e in store.events("sess-1", after=2, limit=3)] == [3, 4, 5]
    assert store.events("sess-1", after=10) == []
    assert store.events("unknown") == []
    assert store.last_sequence("unknown") == 0


def test_conflict_or_gap_refused_and_earlier_rows_intact(store: LedgerStore) -> None:
    store.append([make_event(1), make_event(2)])
    other = MessageDelta(text="not what was recorded")
    for bad, why in (
        ([make_event(2, other)], "different event"),
        ([make_event(1, other)], "different event"),
        ([make_event(4)], "gap"),
        ([make_event(3), make_event(5)], "gap"),
        ([make_event(2), make_event(3, other), make_event(3)], "different event"),
    ):
        with pytest.raises(HarnessError) as caught:
            store.append(bad)
        assert caught.value.reason == "ledger-failed"
        assert why in str(caught.value)
    store.flush()
    assert [e.sequence for e in store.events("sess-1")] == [1, 2]
    store.append([make_event(3)])  # the session goes on after a refusal
    assert [e.sequence for e in store.events("sess-1")] == [1, 2, 3]


def test_exact_replay_is_a_no_op(store: LedgerStore) -> None:
    """A retried write (the same events again) records nothing twice and is not refused."""
    first = [make_event(i, payload) for i, payload in enumerate(SAMPLES[:5], start=1)]
    store.append(first)
    store.append(first[2:3])
    store.flush()
    store.append(first)  # after the commit too
    store.append([*first[3:], make_event(6)])  # a replayed prefix, then new events
    store.flush()
    assert store.events("sess-1") == [*first, make_event(6)]
    assert store.last_sequence("sess-1") == 6


def test_sessions_create_update_list(store: LedgerStore) -> None:
    store.create_session(make_record("a", "2025-01-01T00:00:01Z"))
    store.create_session(make_record("b", "2025-01-01T00:00:02Z"))
    with pytest.raises(HarnessError) as caught:
        store.create_session(make_record("a"))
    assert caught.value.reason == "ledger-failed"
    closed = attrs.evolve(make_record("a", "2025-01-01T00:00:01Z"), status="closed")
    store.update_session(closed)
    assert store.get_session("a") == closed
    assert store.get_session("nope") is None
    assert [r.session_id for r in store.list_sessions()] == ["b", "a"]
    assert [r.session_id for r in store.list_sessions(limit=1)] == ["b"]


def test_many_threads_append_to_different_sessions(store: LedgerStore) -> None:
    threads, per_thread = 8, 300
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            sid = f"t{index}"
            store.create_session(make_record(sid))
            for sequence in range(1, per_thread + 1):
                store.append((make_event(sequence, session_id=sid),))
            store.flush()
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    for index in range(threads):
        assert [e.sequence for e in store.events(f"t{index}")] == list(range(1, per_thread + 1))
    assert len(store.list_sessions()) == threads


@pytest.mark.parametrize("kind", KINDS)
def test_append_after_close_is_refused(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_store(url_for(kind, tmp_path, request))
    store.close()
    store.close()  # idempotent
    if kind != "memory":
        with pytest.raises(HarnessError):
            store.append([make_event(1)])


WRITER = """
import sys
from harness_core.ledger import open_ledger
from harness_core.plugins import get_plugins
from tests.ledger.ledger_samples import DURABLE, KINDS, SAMPLES, make_event, make_record, open_store, url_for
store = open_ledger({url!r}, schemes=get_plugins().ledger_schemes)
store.create_session(make_record())
for i, payload in enumerate(SAMPLES * 50, start=1):
    store.append((make_event(i, payload),))
{finish}
"""


@pytest.mark.parametrize("kind", DURABLE)
@pytest.mark.parametrize("finish", ["store.close()", "store.flush(); import os; os._exit(0)"])
def test_restart_reads_everything_back(
    kind: str, finish: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, tmp_path, request)
    code = WRITER.format(url=url, finish=finish)
    # Run from the checkout: ``python -c`` imports the tests package from the working directory.
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=ROOT)
    reader = textwrap.dedent(
        f"""
        import sys
        from harness_core.ledger import open_ledger
        from harness_core.plugins import get_plugins
        from tests.ledger.ledger_samples import DURABLE, KINDS, SAMPLES, make_event, make_record, open_store, url_for
        store = open_ledger({url!r}, schemes=get_plugins().ledger_schemes)
        expected = [make_event(i, p) for i, p in enumerate(SAMPLES * 50, start=1)]
        assert store.events("sess-1") == expected
        assert store.get_session("sess-1") == make_record()
        assert store.last_sequence("sess-1") == len(expected)
        store.append((make_event(len(expected) + 1),))
        store.close()
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", reader],
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.stdout.strip() == "ok"


def test_jsonl_ignores_a_torn_last_line(tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path}/jsonl-ledger"
    store = open_ledger(url)
    store.append([make_event(1), make_event(2)])
    store.close()
    with open(tmp_path / "jsonl-ledger" / "events.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"protocol_version":1,"event_id":"ev_sess-1_3","seq')
    reopened = open_ledger(url)
    assert [e.sequence for e in reopened.events("sess-1")] == [1, 2]
    # The next writer ends the torn line before its own: it never runs into it, and every
    # reader (this one, a new one, a tail) skips it; damage elsewhere is still refused.
    reopened.append([make_event(3), make_event(4)])
    reopened.close()
    text = (tmp_path / "jsonl-ledger" / "events.jsonl").read_text()
    assert '"seq\ttorn\n{' in text
    again = open_ledger(url)
    assert [e.sequence for e in again.events("sess-1")] == [1, 2, 3, 4]
    again.close()
    with open(tmp_path / "jsonl-ledger" / "events.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"protocol_version":1,"event_id":"ev_sess-1_5","seq\n')
    with pytest.raises(HarnessError) as caught:
        open_ledger(url)
    assert caught.value.reason == "ledger-failed"


def test_sqlite_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    SqliteStore(str(path)).close()
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    connection.close()
    with pytest.raises(HarnessError) as caught:
        SqliteStore(str(path))
    assert caught.value.reason == "ledger-failed"
    assert "newer" in str(caught.value)


def test_sqlite_refuses_foreign_databases(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE events (x)")
    connection.close()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 200)
    for path in (foreign, junk):
        with pytest.raises(HarnessError) as caught:
            SqliteStore(str(path))
        assert caught.value.reason == "ledger-failed"


def test_sqlite_migrates_a_version_1_ledger(tmp_path: Path) -> None:
    import json

    from harness_core.serialize import event_to_dict

    path = tmp_path / "v1.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.executescript(
        """
        CREATE TABLE sessions (session_id TEXT PRIMARY KEY, provider TEXT NOT NULL,
            status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
            record TEXT NOT NULL);
        CREATE TABLE events (session_id TEXT NOT NULL, sequence INTEGER NOT NULL,
            event_id TEXT NOT NULL UNIQUE, turn_id TEXT, type TEXT NOT NULL,
            timestamp TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (session_id, sequence))
            WITHOUT ROWID;
        PRAGMA user_version=1;
        """
    )
    events = [make_event(i, payload) for i, payload in enumerate(SAMPLES, start=1)]
    for e in events:
        body = json.dumps(event_to_dict(e), ensure_ascii=False)
        connection.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (e.session_id, e.sequence, e.event_id, e.turn_id, e.type, e.timestamp, body),
        )
    connection.close()
    store = SqliteStore(str(path))
    assert store.events("sess-1") == events
    store.close()


def test_sqlite_is_append_only_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.append([make_event(1)])
    store.close()
    connection = sqlite3.connect(path)
    for sql in (
        "UPDATE events SET payload = '{}'",
        "DELETE FROM events",
        "INSERT INTO events SELECT session_id, sequence, 'other', turn_id, type, timestamp, "
        "harness, parent_event_id, protocol_version, payload FROM events",
        "INSERT INTO events SELECT 'other', 1, event_id, turn_id, type, timestamp, "
        "harness, parent_event_id, protocol_version, payload FROM events",
    ):
        with pytest.raises(sqlite3.DatabaseError):
            connection.execute(sql)
    connection.close()


def test_sqlite_duplicate_from_another_writer_reported_at_flush(tmp_path: Path) -> None:
    """Two stores on one file: the one that didn't know is refused, nothing is lost."""
    path = str(tmp_path / "ledger.sqlite")
    first, second = SqliteStore(path), SqliteStore(path)
    first.append([make_event(1)])
    first.flush()
    second.append([make_event(1)])  # its guard reads sequence 1 from the table: a replay
    with pytest.raises(HarnessError):  # a different event at sequence 1: refused
        second.append([make_event(1, MessageDelta(text="another writer's"))])
    assert second.last_sequence("sess-1") == 1
    first.append([make_event(2)])
    first.flush()
    with pytest.raises(HarnessError):  # second's guard is stale: its writer refuses the row
        second.append([make_event(2, MessageDelta(text="another writer's"))])
        second.flush()
    assert [e.sequence for e in second.events("sess-1")] == [1, 2]
    second.append([make_event(3)])
    second.flush()
    first.close()
    second.close()


def test_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(open_ledger("memory:"), MemoryStore)
    assert path_of("sqlite:///abs/l.sqlite", "sqlite") == "/abs/l.sqlite"
    assert path_of("sqlite:rel/l.sqlite", "sqlite") == "rel/l.sqlite"
    assert path_of("jsonl:///abs/dir", "jsonl") == "/abs/dir"
    assert set(BUILTIN_SCHEMES) == {"memory", "jsonl", "sqlite"}
    assert {"postgresql", "postgres"} <= set(get_plugins().ledger_schemes)
    assert DEFAULT_LEDGER_URL.startswith("sqlite:")
    for bad in ("bogus://x", "nocolon", "sqlite:", "sqlite://host/x"):
        with pytest.raises(HarnessError) as caught:
            open_ledger(bad)
        assert caught.value.reason == "invalid-request"
        assert "\n" not in str(caught.value)
    monkeypatch.setenv(ENV_LEDGER, "memory:")
    assert isinstance(open_ledger(None), MemoryStore)
    monkeypatch.delenv(ENV_LEDGER)
    monkeypatch.chdir(tmp_path)
    default = open_ledger(None)
    try:
        assert isinstance(default, SqliteStore)
        assert Path(default.path).resolve() == (tmp_path / ".harness/ledger.sqlite").resolve()
    finally:
        default.close()
    seen: list[str] = []

    def custom(url: str) -> Any:
        seen.append(url)
        return MemoryStore()

    open_ledger("custom:thing", schemes={"custom": custom})
    assert seen == ["custom:thing"]


def test_sqlite_refuses_a_session_id_already_in_the_file(tmp_path: Path) -> None:
    """Created by another store on the same file (another process, an earlier run): refused as
    surely as one this store created itself, and the first record is left as it was."""
    path = str(tmp_path / "ledger.sqlite")
    first = SqliteStore(path)
    first.create_session(make_record("sess-1"))
    first.flush()
    first.close()
    second = SqliteStore(path)
    with pytest.raises(HarnessError) as refused:
        second.create_session(make_record("sess-1", created_at="2026-01-01T00:00:00Z"))
    assert (refused.value.reason, refused.value.hint) == (
        "ledger-failed",
        "the session already exists",
    )
    second.create_session(make_record("sess-2"))  # a new id is fine, once
    with pytest.raises(HarnessError):
        second.create_session(make_record("sess-2"))
    assert second.get_session("sess-1").created_at == "2025-01-01T00:00:00Z"
    second.close()


def test_a_closed_sqlite_store_refuses_every_write_and_records_nothing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.create_session(make_record("a"))
    store.append([make_event(1, session_id="a")])
    store.close()
    store.close()  # idempotent
    writes = {
        "create_session": lambda: store.create_session(make_record("b")),
        "update_session": lambda: store.update_session(
            attrs.evolve(make_record("a"), status="closed")
        ),
        "append": lambda: store.append([make_event(2, session_id="a")]),
        "import_session": lambda: store.import_session(
            make_record("c"), [[make_event(1, session_id="c")]]
        ),
        "claim": lambda: store.claim("a"),
    }
    for name, write in writes.items():
        with pytest.raises(HarnessError) as refused:
            write()
        assert (refused.value.reason, refused.value.hint) == (
            "ledger-failed",
            "the ledger is closed",
        ), name
    reopened = SqliteStore(str(path))
    try:
        assert [r.session_id for r in reopened.list_sessions()] == ["a"]
        assert reopened.get_session("a") == make_record("a")
        assert [e.sequence for e in reopened.events("a")] == [1]
    finally:
        reopened.close()


def test_sqlite_imports_a_session_whole_or_not_at_all(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "ledger.sqlite"))
    try:
        store.create_session(make_record("live"))
        store.append([make_event(1, session_id="live")])  # staged, not yet committed
        # streamed batches, committed together (the live session's staged event too, first)
        batches = [[make_event(1, session_id="c"), make_event(2, session_id="c")]]
        store.import_session(make_record("c"), [*batches, [make_event(3, session_id="c")]])
        assert store.get_session("c") == make_record("c")
        assert [e.sequence for e in store.events("c")] == [1, 2, 3]
        assert [e.sequence for e in store.events("live")] == [1]

        refusals = [
            # (record, batches, hint): each leaves nothing behind
            (make_record("c"), [[make_event(1, session_id="c")]], "the ledger already has this session id"),
            (make_record("d"), [[make_event(2, session_id="d")]], "the bundle's events are not its own"),
            (make_record("d"), [[make_event(1, session_id="d"), make_event(1, session_id="d")]], "the bundle's events are not its own"),
            (make_record("d"), [[make_event(1, session_id="d")], [make_event(1, session_id="c")]], "the bundle's events are not its own"),
            (make_record("d"), [[make_event(1, session_id="d")], [attrs.evolve(make_event(2, session_id="d"), event_id="ev_c_1")]], "an event id of the bundle is already in the ledger"),
        ]  # fmt: skip
        for record, bad, hint in refusals:
            with pytest.raises(HarnessError) as refused:
                store.import_session(record, bad)
            assert (refused.value.reason, refused.value.hint) == ("invalid-request", hint)
            assert store.get_session("d") is None
            assert list(store.events("d")) == []
            assert [e.sequence for e in store.events("c")] == [1, 2, 3]
        store.import_session(make_record("d"), [[make_event(1, session_id="d")]])  # still works
        assert [e.sequence for e in store.events("d")] == [1]
    finally:
        store.close()
