"""The SQLite store's own paths, case by case (issue 35: the mutation run of
``harness_core/ledger/sqlite.py`` found them unchecked; ``tools/mutation.py`` runs this file).

Claims: a session created here is claimed at epoch 1 without a query, and its claim reaches the
file; taken back after another store held it, the claim asks the file and the sequence goes on
from what that store wrote; a claim the database refuses is one fixed ``ledger-failed`` line,
without the database's own words. Prune inside one process: one closed, archived session goes
with its claim, leaving a tombstone; an open, held, changed or unknown session is refused."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest
from harness_hookspecs import HarnessError, MessageDelta

import harness_core.ledger.sqlite as sqlite_module
from harness_core.ledger import open_ledger
from harness_core.ledger.base import LEASE
from harness_core.ledger.sqlite import (
    CHECKPOINT_EVERY,
    CHECKPOINT_ROWS,
    HERE_MAX,
    STAGED_MAX,
    SqliteStore,
)
from harness_core.ledger.sqlite_schema import unchanged

from .ledger_samples import make_event, make_record, wait_unclaimed


def _claims(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT * FROM claims ORDER BY session_id").fetchall()


def test_a_session_created_here_is_claimed_at_epoch_1_and_the_claim_is_stored(tmp_path):
    path = tmp_path / "l.sqlite"
    store, other = open_ledger(f"sqlite:///{path}"), open_ledger(f"sqlite:///{path}")
    try:
        store.create_session(make_record("sess-1"))
        before = time.time()
        assert store.claim("sess-1") == 1
        store.flush()
        assert store.claim("sess-1") == 1  # held: the same epoch, no second claim
        [(session_id, epoch, owner, renewed)] = _claims(path)
        assert (session_id, epoch) == ("sess-1", 1)
        assert f":{os.getpid()}:" in owner  # HOST:PID:START#STORE
        assert before <= renewed <= time.time()
        assert store.claimed("sess-1") and other.claimed("sess-1")  # the file says so too
        with pytest.raises(HarnessError) as busy:
            other.claim("sess-1")
        assert busy.value.reason == "session-busy"
    finally:
        store.close()
        other.close()


def test_a_session_created_here_and_taken_back_goes_on_from_the_other_writer(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    first, second = open_ledger(url), open_ledger(url)
    try:
        first.create_session(make_record("sess-1"))
        assert first.claim("sess-1") == 1
        first.append([make_event(1), make_event(2)])
        first.release("sess-1")
        first.flush()
        assert second.claim("sess-1") == 2
        second.append([make_event(3), make_event(4), make_event(5)])
        second.release("sess-1")
        second.flush()
        assert not first.claimed("sess-1")
        # Created here, but claimed anew: the file is asked (epoch 3, not the first claim's 1)
        # and the sequence goes on from what the second store wrote.
        assert first.claim("sess-1") == 3
        for taken in (1, 3):  # the other store's sequences: refused at once, not at a flush
            with pytest.raises(HarnessError) as conflict:
                first.append([make_event(taken, MessageDelta(text="y"))])
            assert conflict.value.reason == "ledger-failed"
        first.append([make_event(6)])
        first.flush()
        assert [e.sequence for e in first.events("sess-1")] == [1, 2, 3, 4, 5, 6]
        with pytest.raises(HarnessError) as stale:
            first.append([make_event(5, MessageDelta(text="y"))])  # the other store's 5 is known
        assert stale.value.reason == "ledger-failed"
    finally:
        first.close()
        second.close()


def test_a_claim_the_database_refuses_is_one_fixed_line(tmp_path):
    path = tmp_path / "l.sqlite"
    store = open_ledger(f"sqlite:///{path}")
    try:
        with sqlite3.connect(path) as connection:  # another program forbids new claims
            connection.executescript(
                "CREATE TRIGGER no_claims BEFORE INSERT ON claims "
                "BEGIN SELECT RAISE(ABORT, 'claims are frozen by the operator'); END;"
            )
        with pytest.raises(HarnessError) as refused:
            store.claim("sess-1")  # not created here: the claim is read and taken in the file
        assert refused.value.reason == "ledger-failed"
        assert refused.value.hint == "the SQLite ledger could not be written"
        assert "frozen" not in str(refused.value)
        assert not store.claimed("sess-1")
        assert _claims(path) == []
    finally:
        store.close()


def _rows(path: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute(sql, args).fetchall()


def _closed_session(store: SqliteStore, session_id: str, events: int) -> None:
    store.create_session(make_record(session_id))
    store.claim(session_id)
    store.append([make_event(n, session_id=session_id) for n in range(1, events + 1)])
    store.update_session(attrs.evolve(make_record(session_id), status="closed"))
    store.release(session_id)
    store.flush()


def test_prune_removes_one_closed_session_and_leaves_its_tombstone(tmp_path):
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        _closed_session(store, "gone", 3)
        _closed_session(store, "kept", 2)
        assert store.get_session("gone") is not None  # remembered by this store
        before = time.time()
        assert store.prune_session("gone", archived_through=3) == 3
        assert store.get_session("gone") is None  # not from the store's memory either
        assert store.events("gone") == [] and store.last_sequence("gone") == 0
        assert [s.session_id for s in store.list_sessions()] == ["kept"]
        assert [e.sequence for e in store.events("kept")] == [1, 2]
        [(session_id, pruned_at, last)] = _rows(path, "SELECT * FROM pruned")
        assert (session_id, last) == ("gone", 3)
        assert pruned_at[:4] == time.strftime("%Y", time.gmtime(before))
        assert _rows(path, "SELECT session_id FROM sessions") == [("kept",)]
        assert _rows(path, "SELECT session_id FROM claims") == [("kept",)]
        assert _rows(path, "SELECT DISTINCT session_id FROM events") == [("kept",)]
    finally:
        store.close()
    assert unchanged(str(path))  # closed cleanly: the next open need not read every page


def test_prune_refuses_what_it_must_not_remove_and_changes_nothing(tmp_path):
    path = tmp_path / "l.sqlite"
    store, holder = SqliteStore(str(path)), SqliteStore(str(path))
    try:
        _closed_session(store, "closed", 2)
        store.create_session(make_record("open"))
        store.append([make_event(1, session_id="open")])
        store.flush()
        cases = [
            ("open", 1, "invalid-request", "session open is open"),
            ("closed", 1, "invalid-request", "sequence 2, archived 1"),
            ("closed", 3, "invalid-request", "sequence 2, archived 3"),
            ("missing", 0, "session-not-found", None),
        ]
        for session_id, through, reason, hint in cases:
            with pytest.raises(HarnessError) as refused:
                store.prune_session(session_id, archived_through=through)
            assert refused.value.reason == reason, session_id
            assert hint is None or hint in refused.value.hint
        holder.claim("closed")  # another live writer holds it
        with pytest.raises(HarnessError) as busy:
            store.prune_session("closed", archived_through=2)
        assert busy.value.reason == "session-busy"
        holder.release("closed")
        holder.flush()
        store.claim("closed")  # this store holds it: refused before any transaction
        with pytest.raises(HarnessError) as own:
            store.prune_session("closed", archived_through=2)
        assert own.value.reason == "session-busy"
        assert _rows(path, "SELECT * FROM pruned") == []
        assert [e.sequence for e in store.events("closed")] == [1, 2]
        store.release("closed")
        assert store.prune_session("closed", archived_through=2) == 2
    finally:
        store.close()
        holder.close()
    with pytest.raises(HarnessError) as gone:
        store.prune_session("open", archived_through=1)
    assert (gone.value.reason, gone.value.hint) == ("ledger-failed", "the ledger is closed")


def test_prune_takes_over_the_claim_of_a_writer_long_gone(tmp_path):
    path = tmp_path / "l.sqlite"
    writer = SqliteStore(str(path))
    _closed_session(writer, "s", 1)
    writer.close()
    store = SqliteStore(str(path))  # has never seen the session
    try:
        with sqlite3.connect(path) as connection:  # a writer on another host, silent for an hour
            connection.execute(
                "UPDATE claims SET owner = 'elsewhere:1:1#x', renewed_at = ? WHERE session_id = 's'",
                (time.time() - 3600,),
            )
        assert store.prune_session("s", archived_through=1) == 1
        assert _rows(path, "SELECT * FROM claims") == []
    finally:
        store.close()


def test_after_an_event_that_could_not_be_stored_its_session_gets_no_later_one(tmp_path):
    """One session's event the file refuses (here: an id SQLite cannot encode, as a full disk
    would refuse it) breaks that session alone: its later events are held back, even in a batch
    with another session's, until it is claimed again; the other session's all go in."""
    store = SqliteStore(str(tmp_path / "l.sqlite"))
    try:
        for session_id in ("a", "b"):
            store.create_session(make_record(session_id))
            store.claim(session_id)
        store.append([make_event(1, session_id="a"), make_event(1, session_id="b")])
        store.flush()
        unwritable = attrs.evolve(make_event(2, session_id="a"), event_id="ev_\udc80")
        store.append([unwritable, make_event(3, session_id="a")])
        store.append([make_event(2, session_id="b")])
        with pytest.raises(HarnessError) as refused:
            store.flush()
        assert (refused.value.reason, refused.value.hint) == (
            "ledger-failed",
            "an event could not be stored",
        )
        store.append([make_event(4, session_id="a")])  # after the gap: held back
        store.append([make_event(3, session_id="b")])
        with pytest.raises(HarnessError) as held:
            store.flush()
        assert (held.value.reason, held.value.hint) == (
            "ledger-failed",
            "the SQLite ledger could not be written",
        )
        store.append([make_event(4, session_id="b")])  # a healthy batch says nothing
        store.flush()
        assert [e.sequence for e in store.events("a")] == [1]
        assert [e.sequence for e in store.events("b")] == [1, 2, 3, 4]
        store.release("a")
        store.flush()
        store.claim("a")  # claimed anew: it goes on from what is stored
        assert store.last_sequence("a") == 1
        store.append([make_event(2, session_id="a")])
        store.flush()
        assert [e.sequence for e in store.events("a")] == [1, 2]
    finally:
        store.close()
    assert not unchanged(str(tmp_path / "l.sqlite"))  # a write failed: the next open checks all


class _Clock:
    """The SQLite module's ``time`` with a wall clock the test moves (the lease's third)."""

    def __init__(self) -> None:
        self.ahead = 0.0
        self.monotonic = time.monotonic
        self.sleep = time.sleep

    def time(self) -> float:
        return time.time() + self.ahead


def test_the_writer_renews_its_claim_once_a_third_of_the_lease_has_passed(tmp_path, monkeypatch):
    path = tmp_path / "l.sqlite"
    clock = _Clock()
    monkeypatch.setattr(sqlite_module, "time", clock)
    store = SqliteStore(str(path))
    try:
        store.create_session(make_record("s"))
        store.claim("s")
        store.append([make_event(1, session_id="s")])
        store.flush()
        [(claimed_at,)] = _rows(path, "SELECT renewed_at FROM claims")
        clock.ahead = LEASE / 3 - 5  # not yet a third: left as it is
        store.append([make_event(2, session_id="s")])
        store.flush()
        assert _rows(path, "SELECT renewed_at FROM claims") == [(claimed_at,)]
        clock.ahead = LEASE / 3 + 5  # past a third of the lease since the claim: renewed
        store.append([make_event(3, session_id="s")])
        store.flush()
        [(renewed_at,)] = _rows(path, "SELECT renewed_at FROM claims")
        assert renewed_at >= claimed_at + LEASE / 3 + 5
        clock.ahead += 5  # since the renewal, not since the claim: left again
        store.append([make_event(4, session_id="s")])
        store.flush()
        assert _rows(path, "SELECT renewed_at FROM claims") == [(renewed_at,)]
    finally:
        store.close()


def test_a_batch_keeps_the_rows_of_unheld_sessions_and_drops_those_another_writer_holds(tmp_path):
    """Fencing is per session: of one batch, the rows of a session a writer on another host
    holds (its lease running) are refused; those of a session whose holder went silent past
    the lease, or that was released, are written."""
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        for session_id in ("held", "stale", "released"):
            store.create_session(make_record(session_id))
        store.flush()
        now = time.time()
        with sqlite3.connect(path) as connection:
            connection.executemany(
                "INSERT INTO claims VALUES (?, 1, ?, ?)",
                [
                    ("held", "elsewhere:1:1#x", now),
                    ("stale", "elsewhere:2:2#y", now - 3600),
                    ("released", None, now),
                ],
            )
        store.append([make_event(1, session_id=s) for s in ("stale", "held", "released")])
        with pytest.raises(HarnessError) as refused:
            store.flush()
        assert (refused.value.reason, refused.value.hint) == (
            "ledger-failed",
            "the session is claimed by another writer",
        )
        assert store.events("held") == []
        assert [e.sequence for e in store.events("stale")] == [1]
        assert [e.sequence for e in store.events("released")] == [1]
        assert store.claimed("held")
        assert not store.claimed("stale") and not store.claimed("released")
    finally:
        store.close()


def _eventually(condition, what: str) -> None:
    """Poll ``condition`` for up to 5 s: another store's writes land when its writer thread
    gets to them, not at a moment the test can name."""
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not seen within 5 s"
        time.sleep(0.01)


def test_a_record_a_claim_and_a_release_reach_the_file_without_a_flush(tmp_path):
    """Other processes read records and claims: each is written soon by itself, not at the holder's
    next flush (which may never come: a host keeps an idle session's store open)."""
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    holder, other = open_ledger(url), open_ledger(url)
    try:
        holder.create_session(make_record("s"))
        holder.claim("s")
        holder.flush()
        assert other.claimed("s")
        holder.release("s")
        wait_unclaimed(other, "s")
        assert other.claim("s") == 2
        other.release("s")
        other.flush()
        holder.create_session(make_record("t"))  # the record too
        _eventually(lambda: other.get_session("t") is not None, "the new session")
        holder.update_session(attrs.evolve(make_record("s"), status="closed"))
        _eventually(lambda: other.get_session("s").status == "closed", "the closed status")
        holder.flush()
        holder.claim("t")  # a session created here: its claim is written soon, too
        _eventually(lambda: other.claimed("t"), "the claim")
        with pytest.raises(HarnessError) as busy:
            other.claim("t")
        assert busy.value.reason == "session-busy"
    finally:
        holder.close()
        other.close()


def test_reads_of_an_id_no_row_can_have_find_nothing_and_a_broken_file_is_one_line(tmp_path):
    """An id SQLite cannot encode (a surrogate-escaped argv) is in no row: reads answer
    nothing. Tables gone behind the store's back make every read one fixed ``ledger-failed``
    line, without SQLite's own words."""
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        store.create_session(make_record("s"))
        store.append([make_event(1, session_id="s")])
        store.flush()
        odd = "s\udc80"
        assert store.last_sequence(odd) == 0
        assert store.events(odd) == [] and store.get_session(odd) is None
        assert not store.claimed(odd)
        with sqlite3.connect(path) as connection:
            connection.execute("ALTER TABLE events RENAME TO gone_events")
            connection.execute("ALTER TABLE sessions RENAME TO gone_sessions")
        reads = {
            "events": lambda: store.events("s"),
            "last_sequence": lambda: store.last_sequence("t"),
            "get_session": lambda: store.get_session("t"),
            "list_sessions": lambda: store.list_sessions(),
        }
        for name, read in reads.items():
            with pytest.raises(HarnessError) as refused:
                read()
            assert (refused.value.reason, refused.value.hint) == (
                "ledger-failed",
                "the SQLite ledger could not be read",
            ), name
            assert "gone" not in str(refused.value) and "no such table" not in str(refused.value)
        assert store.get_session("s") == make_record("s")  # what this store wrote, from memory
        with pytest.raises(HarnessError) as create:
            store.create_session(make_record("t"))  # is the id taken? the file cannot say
        assert (create.value.reason, create.value.hint) == (
            "ledger-failed",
            "the SQLite ledger could not be read",
        )
    finally:
        store.close()


def test_the_last_sequence_counts_what_is_appended_and_what_another_store_wrote(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    first = open_ledger(url)
    try:
        first.create_session(make_record("s"))
        with pytest.raises(HarnessError) as gap:
            first.append([make_event(2, session_id="s")])  # a new session starts at 1
        assert gap.value.reason == "ledger-failed"
        first.append([make_event(1, session_id="s"), make_event(2, session_id="s")])
        assert first.last_sequence("s") == 2  # appended, not yet flushed
        first.flush()
        second = open_ledger(url)
        try:
            assert second.last_sequence("s") == 2  # from the file
            assert second.last_sequence("other") == 0
        finally:
            second.close()
    finally:
        first.close()


def test_an_import_the_database_refuses_is_one_fixed_line_and_stores_nothing(tmp_path):
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        with sqlite3.connect(path) as connection:  # the operator's trigger fails at run time
            connection.execute(
                "CREATE TRIGGER no_import BEFORE INSERT ON events "
                "BEGIN SELECT load_extension('no such extension'); END"
            )
        with pytest.raises(HarnessError) as refused:
            store.import_session(make_record("imp"), [[make_event(1, session_id="imp")]])
        assert (refused.value.reason, refused.value.hint) == (
            "ledger-failed",
            "the import could not be stored",
        )
        assert store.get_session("imp") is None and store.events("imp") == []
        with sqlite3.connect(path) as connection:
            connection.execute("DROP TRIGGER no_import")
        store.import_session(make_record("ok"), [[make_event(1, session_id="ok")]])
        assert [e.sequence for e in store.events("ok")] == [1]
        shutil.rmtree(tmp_path)  # the directory goes: the import's own connection cannot open
        with pytest.raises(HarnessError) as unopened:
            store.import_session(make_record("late"), [[make_event(1, session_id="late")]])
        assert (unopened.value.reason, unopened.value.hint) == (
            "ledger-failed",
            f"the SQLite ledger {store.path} could not be opened",
        )
    finally:
        store.close()


def test_close_gives_up_the_stores_claims(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    first = open_ledger(url)
    first.create_session(make_record("s"))
    first.claim("s")
    first.close()
    second = open_ledger(
        url
    )  # same process: the claim's owner is alive, so only a release frees it
    try:
        assert not second.claimed("s")
        assert second.claim("s") == 2
    finally:
        second.close()


def test_flush_notify_calls_back_only_when_it_says_so(tmp_path):
    """``flush_notify``: False when the flush committed the stage itself (or the store is
    closed) - no callback comes; True when the writer thread has it - the callback comes once
    everything appended before it is committed."""
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    store, reader = open_ledger(url), open_ledger(url)
    called = threading.Event()
    try:
        store.create_session(make_record("s"))
        store.claim("s")
        store.append([make_event(1, session_id="s")])
        assert store.flush_notify(called.set) is False  # a few writes: committed in the call
        assert [e.sequence for e in reader.events("s")] == [1]
        for sequence in range(2, 2 + 2 * HERE_MAX):  # more writes than a caller commits
            store.append([make_event(sequence, session_id="s")])
        assert store.flush_notify(called.set) is True  # the writer thread commits them
        assert called.wait(10)
        assert reader.last_sequence("s") == 1 + 2 * HERE_MAX
    finally:
        store.close()
        reader.close()
    called.clear()
    assert store.flush_notify(called.set) is False  # closed: nothing to wait for
    assert not called.wait(0.05)


def test_flushes_that_commit_themselves_get_a_checkpoint_every_so_often(tmp_path):
    """Commits made by flushes never checkpoint (no fsync on the caller); after
    ``CHECKPOINT_EVERY`` of them the writer thread runs one: the file itself then holds the
    events (before, they are only in the WAL), and flushes go on committing."""
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        store.create_session(make_record("s"))
        store.claim("s")
        store.flush()
        empty = path.stat().st_size
        for sequence in range(1, CHECKPOINT_EVERY + 1):
            store.append([make_event(sequence, MessageDelta(text="x" * 2000), session_id="s")])
            store.flush()
        _eventually(lambda: path.stat().st_size > empty + 100 * 2000, "the checkpoint")
        for sequence in range(CHECKPOINT_EVERY + 1, 2 * CHECKPOINT_EVERY + 2):
            store.append([make_event(sequence, session_id="s")])
            store.flush()
        assert store.last_sequence("s") == 2 * CHECKPOINT_EVERY + 1
    finally:
        store.close()
    reopened = SqliteStore(str(path))
    try:
        assert len(reopened.events("s")) == 2 * CHECKPOINT_EVERY + 1
    finally:
        reopened.close()


def test_a_path_that_cannot_hold_a_ledger_or_a_foreign_file_is_refused_untouched(tmp_path):
    """Open refuses with one fixed line: a path below a regular file, a directory, a SQLite
    database that is not a ledger - the last left byte for byte as it was (no WAL switch)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("INSERT INTO notes VALUES ('mine')")
    connection.close()
    before = foreign.read_bytes()
    for path in (blocker / "l.sqlite", tmp_path):
        with pytest.raises(HarnessError) as refused:
            SqliteStore(str(path))
        assert (refused.value.reason, refused.value.hint) == (
            "ledger-failed",
            f"the SQLite ledger {path} could not be opened",
        ), path
    with pytest.raises(HarnessError) as not_a_ledger:
        SqliteStore(str(foreign))
    assert not_a_ledger.value.reason == "ledger-failed"
    assert foreign.read_bytes() == before
    assert not Path(str(foreign) + "-wal").exists()


def _locked_for(path: Path, seconds: float) -> threading.Timer:
    """Another process's write transaction on ``path``, ended after ``seconds``."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")

    def end() -> None:
        other.execute("COMMIT")
        other.close()

    timer = threading.Timer(seconds, end)
    timer.start()
    return timer


@pytest.mark.parametrize("appends", [3, STAGED_MAX + 8], ids=["few", "a-full-stage-and-more"])
def test_a_flush_while_another_process_holds_the_write_lock_waits_and_keeps_every_event(
    tmp_path, appends
):
    """The flush cannot commit in the calling thread (the lock is taken, and with a full stage
    the writer thread has one in hand): it waits for the writer thread, which waits for the
    lock, and returns once every event appended before it is in the file."""
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        store.create_session(make_record("s"))
        store.claim("s")
        store.flush()
        lock = _locked_for(path, 0.5)
        started = time.monotonic()
        for sequence in range(1, appends + 1):
            store.append([make_event(sequence, session_id="s")])
        store.flush()
        waited = time.monotonic() - started
        lock.join()
        assert waited >= 0.4  # not before the other transaction ended
        stored = _rows(path, "SELECT sequence FROM events WHERE session_id = 's'")
        assert [s for (s,) in stored] == list(range(1, appends + 1))
    finally:
        store.close()


def test_flush_notify_with_nothing_staged_has_nothing_to_wait_for(tmp_path):
    store = SqliteStore(str(tmp_path / "l.sqlite"))
    called = threading.Event()
    try:
        store.create_session(make_record("s"))
        store.flush()
        assert store.flush_notify(called.set) is False
        assert not called.wait(0.05)
    finally:
        store.close()


def test_the_writer_thread_checkpoints_after_so_many_rows(tmp_path):
    """Stages the writer thread commits (a full stage each) count towards a checkpoint at
    ``CHECKPOINT_ROWS`` rows: the file itself then holds the events (before, only the WAL)."""
    path = tmp_path / "l.sqlite"
    store = SqliteStore(str(path))
    try:
        store.create_session(make_record("s"))
        store.claim("s")
        store.flush()
        empty = path.stat().st_size
        events = CHECKPOINT_ROWS + STAGED_MAX
        text = "x" * 1000  # the WAL then holds more than WAL_PAGES_MAX pages at the checkpoint
        for sequence in range(1, events + 1):
            store.append([make_event(sequence, MessageDelta(text=text), session_id="s")])
        store.flush()
        assert store.last_sequence("s") == events
        _eventually(lambda: path.stat().st_size > empty + CHECKPOINT_ROWS * 1000, "the checkpoint")
        for sequence in range(events + 1, events + 4):  # and writes go on, in either thread
            store.append([make_event(sequence, session_id="s")])
            store.flush()
        for sequence in range(events + 4, events + 4 + STAGED_MAX):
            store.append([make_event(sequence, session_id="s")])
        store.flush()
        assert len(_rows(path, "SELECT sequence FROM events")) == events + 3 + STAGED_MAX
    finally:
        store.close()


def test_a_process_that_never_closes_its_store_still_exits(tmp_path):
    """The writer thread does not hold the process open: one that exits without closing its
    store (a forgotten close, an error path) ends, and what it flushed is in the file. The
    child imports what this test process imports (its sys.path)."""
    path = tmp_path / "l.sqlite"
    code = (
        "import sys; from harness_core.ledger.sqlite import SqliteStore; "
        "store = SqliteStore(sys.argv[1]); store.flush(); print('flushed')"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout.strip()) == (0, "flushed"), done.stderr[-500:]
    assert _rows(path, "SELECT count(*) FROM sessions") == [(0,)]
