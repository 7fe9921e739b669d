"""The portable export bundle, built only from the ledger."""

from __future__ import annotations

import json

import pytest
from harness_hookspecs import HarnessError, LedgerStore
from harness_hookspecs.events import (
    MessageCompleted,
    MessageDelta,
    SessionOpened,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnRestarted,
    TurnStarted,
)

from harness_core.export import EXPORT_FORMAT, EXPORT_VERSION, export_session
from harness_core.ledger import open_ledger
from harness_core.serialize import event_to_dict, record_to_dict

from .ledger_samples import make_event, make_record


def test_export_bundle(store: LedgerStore) -> None:
    """On every store kind (the ``store`` fixture: memory, JSONL, SQLite, PostgreSQL)."""
    store.create_session(make_record())
    plan = [
        (None, SessionOpened(provider="echo", target="local")),
        ("t1", TurnStarted(prompt="a")),
        ("t1", MessageDelta(text="hel")),
        ("t1", MessageDelta(text="lo")),
        ("t1", TurnCompleted()),
        ("t2", TurnStarted(prompt="b")),
        ("t2", TurnFailed(reason="provider-failed")),
        ("t3", TurnStarted(prompt="c")),
        ("t3", TurnCancelled()),
        ("t5", TurnStarted(prompt="e")),
        ("t5", MessageCompleted(text="whole")),
        ("t5", TurnCompleted()),
        ("t6", TurnStarted(prompt="f")),
        ("t6", MessageDelta(text="abandoned")),
        ("t6", MessageCompleted(text="old")),
        ("t6", TurnRestarted(attempt=2)),
        ("t6", MessageDelta(text="fresh")),
        ("t6", TurnCompleted()),
        ("t4", TurnStarted(prompt="d")),
        ("t4", MessageDelta(text="partial")),
    ]
    events = [
        make_event(i, payload, turn_id=turn) for i, (turn, payload) in enumerate(plan, start=1)
    ]
    store.append(events)
    bundle = export_session(store, "sess-1")
    json.dumps(bundle)
    assert bundle["format"] == EXPORT_FORMAT == "harness-core.export"
    assert bundle["version"] == EXPORT_VERSION == 1
    assert bundle["exported_at"].endswith("Z")
    assert bundle["session"] == record_to_dict(make_record())
    assert bundle["events"] == [event_to_dict(e) for e in events]
    turns = {t["turn_id"]: t for t in bundle["turns"]}
    assert list(turns) == ["t1", "t2", "t3", "t5", "t6", "t4"]
    assert (turns["t6"]["status"], turns["t6"]["text"], turns["t6"]["attempt"]) == (
        "completed",
        "fresh",
        2,
    )
    assert (turns["t5"]["status"], turns["t5"]["text"]) == ("completed", "whole")
    assert turns["t1"] | {} == {
        "turn_id": "t1",
        "status": "completed",
        "started_sequence": 2,
        "terminal_sequence": 5,
        "text": "hello",
    }
    assert (turns["t2"]["status"], turns["t2"]["reason"]) == ("failed", "provider-failed")
    assert turns["t3"]["status"] == "cancelled"
    assert turns["t4"]["status"] == "interrupted"  # nobody holds the session: its writer is gone
    assert turns["t4"]["terminal_sequence"] is None
    assert turns["t4"]["text"] == "partial"
    store.claim(make_record().session_id)
    running = export_session(store, make_record().session_id)["turns"]
    assert [t["status"] for t in running if t["turn_id"] == "t4"] == ["running"]


def test_export_unknown_session() -> None:
    with pytest.raises(HarnessError) as caught:
        export_session(open_ledger("memory:"), "nope")
    assert caught.value.reason == "session-not-found"
