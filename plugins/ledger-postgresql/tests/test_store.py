"""The PostgreSQL store's own guarantees: fencing, replays, races, append-only, migrations."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from harness_hookspecs import HarnessError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import event, record
from ledger_postgresql.schema import SCHEMA_VERSION
from ledger_postgresql.store import FENCED, PostgresStore


@pytest.fixture
def url(postgresql_ledger_url: str) -> str:
    return postgresql_ledger_url


@pytest.fixture
def stores(url: str) -> Iterator[list[PostgresStore]]:
    opened: list[PostgresStore] = []
    yield opened
    for store in opened:
        store.close()


def open_two(url: str, stores: list[PostgresStore]) -> tuple[PostgresStore, PostgresStore]:
    stores += [PostgresStore(url), PostgresStore(url)]
    return stores[-2], stores[-1]


def test_a_stale_writer_is_fenced_after_another_takes_over(
    url: str, stores: list[PostgresStore]
) -> None:
    old, new = open_two(url, stores)
    assert old.claim("s1") == 1
    assert old.claim("s1") == 1  # its holder claims it again: the same epoch
    old.append([event(1), event(2)])
    old.flush()
    with pytest.raises(HarnessError) as busy:  # the old writer lives: a plain claim is refused
        new.claim("s1")
    assert busy.value.reason == "session-busy" and new.claimed("s1")
    assert new.take_over("s1") == 2  # the new owner takes over at sequence 2, regardless
    new.append([event(3, "new owner")])
    new.flush()
    old.append([event(3, "stale")])  # its own guard cannot know: the database refuses
    with pytest.raises(HarnessError) as caught:
        old.flush()
    assert caught.value.reason == "ledger-failed"
    assert FENCED in str(caught.value)
    old.append([event(4, "stale")])
    with pytest.raises(HarnessError):
        old.flush()
    assert [e.payload.text for e in new.events("s1")] == ["x", "x", "new owner"]  # type: ignore[attr-defined]
    assert new.writer_epoch("s1") == 2
    with pytest.raises(HarnessError) as busy:  # the new owner lives now
        old.claim("s1")
    assert busy.value.reason == "session-busy"
    new.release("s1")
    assert not new.claimed("s1")  # nobody live holds it (the old store still thinks it does)
    assert old.claim("s1") == 3  # claiming again makes it the writer, at the real last sequence
    old.append([event(4, "old is back")])
    old.flush()
    assert old.last_sequence("s1") == 4
    stored = (
        psycopg.connect(url)
        .execute("SELECT sequence, writer_epoch FROM ledger_events ORDER BY sequence")
        .fetchall()
    )
    assert stored == [(1, 1), (2, 1), (3, 2), (4, 3)]


def test_replay_from_another_store_is_a_no_op_and_a_different_payload_is_refused(
    url: str, stores: list[PostgresStore]
) -> None:
    first, second = open_two(url, stores)
    first.append([event(i) for i in range(1, 4)])
    first.flush()
    second.append([event(i) for i in range(1, 5)])  # a retried batch plus one new event
    second.flush()
    assert [e.sequence for e in first.events("s1")] == [1, 2, 3, 4]
    first.append([event(5)])
    first.flush()
    second.append([event(5, "someone else")])  # its guard thinks 5 is next: the database refuses
    with pytest.raises(HarnessError) as caught:
        second.flush()
    assert "different event" in str(caught.value)
    with pytest.raises(HarnessError) as caught:  # the refusal re-read the real last sequence
        second.append([event(7)])
    assert "gap" in str(caught.value)
    assert [e.payload.text for e in second.events("s1")] == ["x"] * 5  # type: ignore[attr-defined]
    second.append([event(6)])  # the refused store goes on from the real last sequence
    second.flush()
    assert second.last_sequence("s1") == 6


def _race(
    index: int, store: PostgresStore, sequence: int, barrier: threading.Barrier, outcomes: list[str]
) -> None:
    store.last_sequence("s1")  # learn the real last sequence
    barrier.wait()
    try:
        store.append([event(sequence, f"writer {index}", writer=f"w{index}")])
        store.flush()
        outcomes.append("won")
    except HarnessError as error:
        assert error.reason == "ledger-failed"
        outcomes.append("lost")


def test_same_sequence_race_has_one_winner(url: str, stores: list[PostgresStore]) -> None:
    writers = [PostgresStore(url) for _ in range(6)]
    stores += writers
    for sequence in range(1, 21):
        barrier = threading.Barrier(len(writers))
        outcomes: list[str] = []
        threads = [
            threading.Thread(target=_race, args=(i, store, sequence, barrier, outcomes))
            for i, store in enumerate(writers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    stored = writers[0].events("s1")
    assert [e.sequence for e in stored] == list(range(1, 21))
    assert len({e.event_id for e in stored}) == 20


def _terminate(url: str, pid: int | None) -> None:
    assert pid is not None
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_of_stores_claiming_one_session_at_once_one_wins(
    url: str, stores: list[PostgresStore]
) -> None:
    claimers = [PostgresStore(url) for _ in range(6)]
    stores += claimers
    barrier = threading.Barrier(len(claimers))
    outcomes: list[str] = []

    def claim(store: PostgresStore) -> None:
        barrier.wait()
        try:
            outcomes.append(f"won {store.claim('s1')}")
        except HarnessError as error:
            outcomes.append(error.reason)

    threads = [threading.Thread(target=claim, args=(store,)) for store in claimers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["session-busy"] * 5 + ["won 1"]


def test_a_writer_whose_claims_connection_died_can_be_taken_over_and_is_fenced(
    url: str, stores: list[PostgresStore]
) -> None:
    old, new = open_two(url, stores)
    assert old.claim("s1") == 1
    old.append([event(1)])
    old.flush()
    _terminate(url, old.claims.backend_pid())  # alive, but no longer known to be
    deadline = time.monotonic() + 5
    while new.claimed("s1") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert new.claim("s1") == 2
    old.append([event(2, "stale")])
    with pytest.raises(HarnessError) as caught:
        old.flush()
    assert FENCED in str(caught.value)
    with pytest.raises(HarnessError) as busy:  # it reconnects; the new writer lives
        old.claim("s1")
    assert busy.value.reason == "session-busy"


def test_a_new_claims_connection_re_takes_the_locks_nobody_took(
    url: str, stores: list[PostgresStore]
) -> None:
    old, new = open_two(url, stores)
    assert (old.claim("s1"), old.claim("s2")) == (1, 1)
    _terminate(url, old.claims.backend_pid())
    assert old.claim("s1") == 1  # the lost connection is replaced, both locks re-taken
    for session_id in ("s1", "s2"):
        assert new.claimed(session_id)
        with pytest.raises(HarnessError) as busy:
            new.claim(session_id)
        assert busy.value.reason == "session-busy"
    old.release("s2")
    assert new.claim("s2") == 2


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE ledger_events SET payload = '{}'",
        "DELETE FROM ledger_events",
        "TRUNCATE ledger_events",
        "INSERT INTO ledger_events SELECT session_id, sequence, 'other', turn_id, type, "
        "timestamp, harness, parent_event_id, protocol_version, payload, writer_epoch "
        "FROM ledger_events",
        "INSERT INTO ledger_events SELECT 'other', 1, event_id, turn_id, type, timestamp, "
        "harness, parent_event_id, protocol_version, payload, writer_epoch FROM ledger_events",
    ],
)
def test_the_events_table_is_append_only_and_unique(
    url: str, stores: list[PostgresStore], sql: str
) -> None:
    store, _ = open_two(url, stores)
    store.append([event(1)])
    store.flush()
    with psycopg.connect(url) as connection, pytest.raises(psycopg.Error):
        connection.execute(sql)
    assert [e.sequence for e in store.events("s1")] == [1]


def test_concurrent_first_opens_migrate_once(url: str, stores: list[PostgresStore]) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(url))
        except BaseException as error:  # pragma: no cover - asserted below
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT * FROM ledger_schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]


def test_newer_schema_and_foreign_tables_are_refused(url: str, postgresql_server: object) -> None:
    PostgresStore(url).close()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("UPDATE ledger_schema_version SET version = version + 1")
    with pytest.raises(HarnessError) as caught:
        PostgresStore(url)
    assert "newer" in str(caught.value)
    foreign = url.replace("search_path%3D", "search_path%3Dforeign_")
    with psycopg.connect(foreign, autocommit=True) as connection:
        schema = foreign.rsplit("%3D", 1)[1]
        connection.execute(f"CREATE SCHEMA {schema}")
        connection.execute("CREATE TABLE ledger_events (x int)")
    with pytest.raises(HarnessError) as caught:
        PostgresStore(foreign)
    assert "another kind" in str(caught.value)


def test_unreachable_server_is_one_clear_line_without_the_url() -> None:
    url = "postgresql://harness:s3cret-password@127.0.0.1:1/nothing"
    with pytest.raises(HarnessError) as caught:
        PostgresStore(url)
    assert caught.value.reason == "ledger-failed"
    message = str(caught.value)
    assert "\n" not in message and "s3cret" not in message and "127.0.0.1" not in message


def test_sessions_and_events_before_the_record(url: str, stores: list[PostgresStore]) -> None:
    store, other = open_two(url, stores)
    store.append([event(1, session_id="early")])  # events may come before the record
    store.flush()
    assert store.list_sessions() == []
    store.create_session(record("early"))
    with pytest.raises(HarnessError):
        store.create_session(record("early"))  # this store's own pending record
    store.flush()
    with pytest.raises(HarnessError):
        other.create_session(record("early"))  # committed: refused at once
    assert other.get_session("early") == record("early")
    assert [r.session_id for r in other.list_sessions()] == ["early"]
    with psycopg.connect(url) as admin:  # hold the writers until both creates are queued
        admin.execute("LOCK TABLE ledger_sessions IN EXCLUSIVE MODE")  # reads still pass
        store.create_session(record("race"))  # two stores in the same instant: one is refused
        other.create_session(record("race"))
    outcomes = []
    for creator in (store, other):
        try:
            creator.flush()
            outcomes.append("created")
        except HarnessError as error:
            assert "already exists" in str(error)
            outcomes.append("refused")
    assert sorted(outcomes) == ["created", "refused"]
    assert store.get_session("race") == other.get_session("race") == record("race")


def test_writer_reconnects_after_its_connection_is_killed(
    url: str, stores: list[PostgresStore]
) -> None:
    store, _ = open_two(url, stores)
    store.append([event(i) for i in range(1, 51)])
    store.flush()
    pid = store.writer_backend_pid
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    store.append([event(i) for i in range(51, 101)])
    store.flush()
    assert [e.sequence for e in store.events("s1")] == list(range(1, 101))


def test_an_abandoned_session_is_written_no_more_and_its_next_claimer_goes_on(
    url: str, stores: list[PostgresStore]
) -> None:
    leaving, staying = open_two(url, stores)
    leaving.claim("s1")
    leaving.append([event(1), event(2)])
    leaving.abandon("s1")  # what came before is committed
    for refused in (lambda: leaving.append([event(3)]), lambda: leaving.update_session(record())):
        with pytest.raises(HarnessError) as caught:
            refused()
        assert caught.value.reason == "ledger-failed" and FENCED in str(caught.value)
    assert not leaving.claimed("s1")
    assert staying.claim("s1") == 2  # not busy: the lock went with the abandon
    staying.append([event(3, writer="b")])
    staying.flush()
    assert [e.sequence for e in staying.events("s1")] == [1, 2, 3]
    assert leaving.take_over("s1") == 3  # taking it again writes again (fencing the other)
    leaving.append([event(4)])
    leaving.flush()


def test_take_over_at_tells_the_last_sequence_and_held_last_follows_own_appends(
    url: str, stores: list[PostgresStore]
) -> None:
    first, second = open_two(url, stores)
    assert first.held_last("s1") is None  # not claimed: it does not know
    assert first.take_over_at("s1") == (1, 0)
    first.append([event(1), event(2)])
    first.flush()
    assert first.held_last("s1") == 2 == first.last_sequence("s1")
    assert first.take_over_at("s1") == (1, 2)  # held: the same epoch, one plain read
    assert second.take_over_at("s1") == (2, 2)  # another store's take-over reads it too
    second.append([event(3, writer="b")])
    second.flush()
    assert second.held_last("s1") == 3
    assert first.held_last("s1") == 2  # stale, as its next claim shows...
    assert first.take_over_at("s1") == (3, 3)  # ...which reads where the session is now
    first.abandon("s1")
    assert first.held_last("s1") is None  # abandoned: no longer its to tell
