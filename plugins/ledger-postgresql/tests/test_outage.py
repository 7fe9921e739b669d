"""Riding out the database (issue 33): a real ``pg_ctl restart -m fast`` and a
``pg_terminate_backend`` of every ledger connection while a writer appends and a tail follows;
an outage longer than the retry window. The server is these tests' own (``conftest``)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import Event, HarnessError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import event, terminate_everyone
from ledger_postgresql.outage import ENV_WINDOW, RetryWindow, window_setting
from ledger_postgresql.store import PostgresStore
from ledger_postgresql.testing import TemporaryPostgres

#: Events a writer appends (one flush each: a turn delivers them one by one).
EVENTS = 400


@pytest.fixture
def server(restartable_server: TemporaryPostgres) -> TemporaryPostgres:
    return restartable_server


@pytest.fixture
def url(restartable_url: str) -> str:
    return restartable_url


class Writer(threading.Thread):
    """Appends ``EVENTS`` events one at a time, each flushed (durable) before the next."""

    def __init__(self, store: PostgresStore, pause: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.pause = pause
        self.durable = 0
        self.error: BaseException | None = None
        self.longest_flush = 0.0

    def run(self) -> None:
        try:
            for sequence in range(1, EVENTS + 1):
                self.store.append([event(sequence)])
                began = time.monotonic()
                self.store.flush()
                self.longest_flush = max(self.longest_flush, time.monotonic() - began)
                self.durable = sequence
                time.sleep(self.pause)
        except BaseException as error:
            self.error = error


def follow(store: PostgresStore, seen: list[Event], count: int) -> threading.Thread:
    async def main() -> None:
        with anyio.fail_after(120):
            async for item in store.tail("s1"):
                seen.append(item)
                if len(seen) == count:
                    return

    thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
    thread.start()
    return thread


def wait_until(condition: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("outage", ["pg_ctl restart -m fast", "pg_terminate_backend"])
def test_a_writer_and_a_tail_ride_out_the_database(
    server: TemporaryPostgres, url: str, outage: str
) -> None:
    store = PostgresStore(url)
    reader = PostgresStore(url)
    store.claim("s1")  # the claims connection is cut too
    seen: list[Event] = []
    tail = follow(reader, seen, EVENTS)
    writer = Writer(store)
    writer.start()
    try:
        for round_ in range(3):  # three outages while the writer writes and the tail follows
            wait_until(lambda r=round_: writer.durable >= (r + 1) * EVENTS // 5 or writer.error)
            if outage == "pg_terminate_backend":
                assert terminate_everyone(server) >= 3  # writer, claims, listener (, readers)
            else:
                server.pg_ctl("restart")
            assert store.last_sequence("s1") >= writer.durable  # reads ride it out too
        writer.join(120)
        tail.join(120)
    finally:
        store.close()
        reader.close()
    assert writer.error is None, repr(writer.error)
    assert writer.durable == EVENTS
    stored = PostgresStore(url)
    try:
        events = stored.events("s1")
        assert stored.claim("s1") == 2  # the writer's claim held through the outages
    finally:
        stored.close()
    assert [e.sequence for e in events] == list(range(1, EVENTS + 1))
    assert len({e.event_id for e in events}) == EVENTS
    assert [e.event_id for e in seen] == [e.event_id for e in events]  # each once, in order


def test_an_outage_longer_than_the_window_fails_flushes_and_keeps_the_events(
    server: TemporaryPostgres, url: str
) -> None:
    store = PostgresStore(url, retry_window=1.0)
    try:
        store.append([event(1), event(2)])
        store.flush()
        server.pg_ctl("stop")
        try:
            store.append([event(3)])
            began = time.monotonic()
            with pytest.raises(HarnessError) as caught:
                store.flush()
            assert 0.9 < time.monotonic() - began < 10  # the window, then the failure
            assert caught.value.reason == "ledger-failed"
            assert "could not be written" in str(caught.value) and "\n" not in str(caught.value)
            assert store.outage
            store.append([event(4)])  # the session goes on in memory: no gap later
            began = time.monotonic()
            with pytest.raises(HarnessError):
                store.flush()  # while the database stays away, at once
            with pytest.raises(HarnessError):
                store.events("s1")  # a read tries once
            assert time.monotonic() - began < 3
        finally:
            server.pg_ctl("start")
        wait_until(lambda: not store.outage, timeout=30)  # the writer wrote what it kept
        store.append([event(5)])
        store.flush()
        assert [e.sequence for e in store.events("s1")] == [1, 2, 3, 4, 5]
    finally:
        store.close()


def test_a_store_closed_during_the_outage_returns_and_loses_only_the_undelivered(
    server: TemporaryPostgres, url: str
) -> None:
    store = PostgresStore(url, retry_window=0.5)
    store.append([event(1)])
    store.flush()
    server.pg_ctl("stop")
    try:
        store.append([event(2)])
        with pytest.raises(HarnessError):
            store.flush()  # event 2 was never delivered
        began = time.monotonic()
        with pytest.raises(HarnessError):
            store.close()
        assert time.monotonic() - began < 15
    finally:
        server.pg_ctl("start")
    after = PostgresStore(url)
    try:
        assert [e.sequence for e in after.events("s1")] == [1]
    finally:
        after.close()


def test_a_commit_that_landed_before_its_connection_died_is_not_written_twice(url: str) -> None:
    """The retry of a batch whose commit the server took (the answer was lost) is a no-op:
    the record and the events are recognised as this store's own, by sequence and event id."""
    from helpers import record

    store = PostgresStore(url)
    try:
        store.create_session(record("s1"))
        store.append([event(1), event(2)])
        store.flush()
        # What a retry after a lost answer sends: the same batch again, marked retried.
        store._commit([record("s1")], [event(1), event(2)], [], retried=True)
        store.flush()
        assert [e.sequence for e in store.events("s1")] == [1, 2]
        assert store.get_session("s1") == record("s1")
        with pytest.raises(HarnessError):  # not a retry: somebody else's session
            store._commit([record("s1")], [], [])
            store.flush()
    finally:
        store.close()


def test_the_window_and_its_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_WINDOW, raising=False)
    assert window_setting() == 30.0
    monkeypatch.setenv(ENV_WINDOW, "2.5")
    assert window_setting() == 2.5
    assert window_setting(7) == 7.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv(ENV_WINDOW, bad)
        with pytest.raises(HarnessError) as caught:
            window_setting()
        assert caught.value.reason == "invalid-request"
    pace = RetryWindow(0.3)
    delays = []
    while (delay := pace.next_delay()) is not None:
        delays.append(delay)
        time.sleep(delay)
    assert 2 <= len(delays) <= 8
    assert all(0 < d <= 2.0 for d in delays)
    assert delays[1] >= 0.05  # it backs off: the second pause is at least half of 0.1
