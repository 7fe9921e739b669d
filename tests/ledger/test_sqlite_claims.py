"""The SQLite store's claims, case by case (issue 35: ``SqliteStore.claim`` and ``claimed`` had
the most surviving mutants of the module): a session created here is claimed at epoch 1 without
a query, and its claim reaches the file; taken back after another store held it, the claim asks
the file and the sequence goes on from what that store wrote; a claim the database refuses is
one fixed ``ledger-failed`` line, without the database's own words."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
from harness_hookspecs import HarnessError, MessageDelta

from harness_core.ledger import open_ledger

from .ledger_samples import make_event, make_record


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
