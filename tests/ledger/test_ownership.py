"""One writer per session, for every store (PostgreSQL too): claim, session-busy, takeover from a
dead owner, fencing of a writer that lost its claim, and the owner checks behind them."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness_hookspecs import CommitsOnAppend, HarnessError, LedgerStore, NotifyingStore

from harness_core.ledger import open_ledger
from harness_core.ledger.owner import host_id, owner_alive, process_start, this_process
from harness_core.ledger.sqlite import SqliteStore

from .ledger_samples import DURABLE, KINDS, make_event, url_for
from .ledger_samples import open_store as open_ledger_of


@pytest.mark.parametrize("kind", KINDS)
def test_claim_is_idempotent_for_its_holder_and_epochs_grow(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = open_ledger_of(url_for(kind, tmp_path, request))
    assert isinstance(store, LedgerStore)
    first = store.claim("sess-1")
    assert store.claim("sess-1") == first and store.claimed("sess-1")
    store.release("sess-1")
    store.release("sess-1")  # idempotent
    assert not store.claimed("sess-1")
    assert store.claim("sess-1") > first
    store.close()


@pytest.mark.parametrize("kind", DURABLE)
def test_a_second_store_is_refused_while_the_first_holds_then_takes_over(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, tmp_path, request)
    first, second = open_ledger_of(url), open_ledger_of(url)
    epoch = first.claim("sess-1")
    first.append([make_event(1), make_event(2)])
    first.flush()
    with pytest.raises(HarnessError) as busy:
        second.claim("sess-1")
    assert busy.value.reason == "session-busy"
    assert second.claimed("sess-1")
    first.release("sess-1")
    first.flush()
    assert second.claim("sess-1") == epoch + 1
    second.append([make_event(3)])  # it sees what the first wrote: no gap, no duplicate
    second.flush()
    assert [e.sequence for e in second.events("sess-1")] == [1, 2, 3]
    first.close()
    second.close()


HOLDER = """
import sys, time
from harness_core.ledger import open_ledger
from harness_core.plugins import get_plugins
store = open_ledger(sys.argv[1], schemes=get_plugins().ledger_schemes)
store.claim("sess-1")
store.flush()
print("claimed", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("kind", DURABLE)
def test_a_claim_whose_process_was_killed_is_taken_over(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, tmp_path, request)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "claimed\n"
    store = open_ledger_of(url)
    with pytest.raises(HarnessError) as busy:
        store.claim("sess-1")
    assert busy.value.reason == "session-busy"
    assert store.claimed("sess-1")
    holder.kill()
    deadline = time.monotonic() + 5
    while process_start(holder.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # dead: a zombie counts as gone before its parent reaps it
    # PostgreSQL drops the holder's lock once its server process sees the connection closed
    # (milliseconds); the file stores see the owner's process gone at once.
    while store.claimed("sess-1") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not store.claimed("sess-1")
    holder.wait()
    assert store.claim("sess-1") == 2
    store.close()


def test_sqlite_fences_a_writer_that_lost_its_claim(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.claim("sess-1")
    store.append([make_event(1)])
    store.flush()
    # Another host took the session over (its lease is fresh): our next rows are refused.
    connection = sqlite3.connect(path)
    connection.execute(
        "UPDATE claims SET epoch = epoch + 1, owner = 'elsewhere/boot:1:1#x', renewed_at = ?",
        (time.time(),),
    )
    connection.commit()
    connection.close()
    store.append([make_event(2)])
    with pytest.raises(HarnessError) as fenced:
        store.flush()
    assert fenced.value.reason == "ledger-failed"
    assert [e.sequence for e in store.events("sess-1")] == [1]
    store.close()


def test_sqlite_a_lease_from_another_host_expires(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    connection = sqlite3.connect(path)
    for session_id, age in (("fresh", 5.0), ("stale", 3600.0)):
        connection.execute(
            "INSERT INTO claims VALUES (?, 3, 'elsewhere/boot:1:1#x', ?)",
            (session_id, time.time() - age),
        )
    connection.commit()
    connection.close()
    with pytest.raises(HarnessError):
        store.claim("fresh")
    assert store.claim("stale") == 4
    store.close()


def test_owner_identity_survives_pid_reuse() -> None:
    me = this_process()
    assert owner_alive(me) is True
    pid = os.getpid()
    assert me == f"{host_id()}:{pid}:{process_start(pid)}"
    assert owner_alive(f"{host_id()}:{pid}:1") is False  # same PID, another start: reused
    assert owner_alive(f"{host_id()}:999999999:1") is False
    assert owner_alive("another-host/boot:1:1") is None  # judged by its lease instead
    assert owner_alive("garbage") is False


def test_the_optional_store_kinds_are_declared() -> None:
    memory = open_ledger("memory:")
    assert isinstance(memory, CommitsOnAppend) and not memory.syncs_on_flush
    assert not isinstance(memory, NotifyingStore)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_durable_kinds(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = open_ledger(url_for(kind, tmp_path, request))
    if kind == "jsonl":
        assert isinstance(store, CommitsOnAppend) and store.syncs_on_flush
        store.append([make_event(1)])  # on disk before flush: survives a crash of the process
        text = (tmp_path / "jsonl-ledger" / "events.jsonl").read_text()
        assert '"sequence":1' in text.replace(" ", "")
    else:
        assert isinstance(store, NotifyingStore) and not isinstance(store, CommitsOnAppend)
    store.close()


def test_sqlite_fences_each_session_of_a_batch_not_only_the_first(tmp_path: Path) -> None:
    """One flush with rows of many sessions: those nobody claimed are written, those of a
    session another live writer holds are refused - wherever that session falls in the batch."""
    path = str(tmp_path / "ledger.sqlite")
    store, other = SqliteStore(path), SqliteStore(path)
    other.claim("held")  # another store of this (live) process: another writer
    other.flush()
    for attempt in range(3):  # the batch's sessions are checked in no fixed order
        free = [f"free-{attempt}-{n}" for n in range(30)]
        for session_id in free:
            store.append([make_event(1, session_id=session_id)])
        store.append([make_event(attempt + 1, session_id="held")])
        with pytest.raises(HarnessError) as fenced:
            store.flush()
        assert fenced.value.reason == "ledger-failed"
        for session_id in free:
            assert [e.sequence for e in store.events(session_id)] == [1], session_id
        assert store.events("held") == []
    other.close()
    store.close()


def test_sqlite_renews_its_claim_as_it_commits_past_a_third_of_the_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer on another host is judged by its lease alone: committing keeps it fresh."""
    from harness_core.ledger import sqlite as sqlite_module

    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    store.claim("sess-1")
    store.append([make_event(1)])
    store.flush()

    def renewed_at() -> float:
        connection = sqlite3.connect(path)
        try:
            return connection.execute("SELECT renewed_at FROM claims").fetchone()[0]
        finally:
            connection.close()

    claimed_at = renewed_at()
    later = time.time() + 25.0  # past LEASE / 3 (20 s) since the claim
    monkeypatch.setattr(sqlite_module.time, "time", lambda: later)
    store.append([make_event(2)])
    store.flush()
    assert renewed_at() == pytest.approx(later, abs=0.01) and claimed_at < later - 20
    store.append([make_event(3)])  # within a third of the lease of that renewal: no write
    store.flush()
    assert renewed_at() == pytest.approx(later, abs=0.01)
    assert [e.sequence for e in store.events("sess-1")] == [1, 2, 3]
    store.close()
