"""Shared helpers for the ledger tests: one sample of every payload type, event builders, the
store kinds and their URLs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from harness_hookspecs import (
    PAYLOAD_TYPES,
    Event,
    LedgerStore,
    SessionRecord,
    SessionRef,
    Usage,
)
from harness_hookspecs.events import (
    Artifact,
    CheckpointCreated,
    CheckpointSkipped,
    MessageCompleted,
    MessageDelta,
    ModelCompleted,
    ModelRequested,
    OutputValidated,
    PermissionRequested,
    PermissionResolved,
    SessionClosed,
    SessionForked,
    SessionOpened,
    SessionResumed,
    SessionRewound,
    Status,
    ThinkingCompleted,
    ThinkingDelta,
    ToolCompleted,
    ToolStarted,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnRestarted,
    TurnStarted,
    TurnSteered,
    UsageReported,
)

from harness_core.ledger import open_ledger
from harness_core.plugins import get_plugins

SAMPLES: list[Any] = [
    SessionOpened(provider="echo", target="local", model="m-1", sandbox="local"),
    SessionResumed(provider="echo", target="cloud"),
    SessionClosed(),
    TurnStarted(prompt="hi\nthere"),
    TurnRestarted(attempt=2),
    MessageDelta(text='x "quoted" \\ é 😀 \t\n'),
    MessageCompleted(text="", role="user"),
    ToolStarted(call_id="c1", name="bash", summary="runs ls"),
    ToolCompleted(call_id="c1", name="bash", ok=False),
    PermissionRequested(request_id="r1", summary="write a file", tool="edit"),
    PermissionResolved(request_id="r1", decision="deny", source="policy"),
    UsageReported(usage=Usage(input_tokens=10, output_tokens=2, cost_usd=0.0125)),
    Status(message="thinking"),
    Artifact(name="out.txt", path="/tmp/out.txt", media_type="text/plain", size=3),
    TurnCompleted(text="done"),
    TurnFailed(reason="timeout", hint="raise the deadline"),
    TurnCancelled(by="close"),
    TurnSteered(text="use\nthe blue one"),
    SessionForked(parent_session_id="s1", child_session_id="s2", at_event_id="ev_1", turns=2),
    CheckpointCreated(
        checkpoint_id="ckpt_" + "a" * 40,
        reason="turn-end",
        turn_id="t1",
        changes=("1\t0\ta.txt", "-\t-\tlogo é.png"),
        changes_omitted=3,
    ),
    CheckpointSkipped(reason="limit-exceeded", turn_id="t1"),
    SessionRewound(checkpoint_id="ckpt_" + "b" * 40, turn_id="t1", conversation=True, turns_kept=1),
    ThinkingDelta(text="weigh\nthe é options"),
    ThinkingCompleted(text=None, characters=42),
    ModelRequested(model="m-1"),
    ModelCompleted(model="m-1", usage=Usage(input_tokens=7, output_tokens=1), duration_ms=12),
    OutputValidated(attempt=1, verdict="failed", reason="enum at $.step"),
]
assert {type(s) for s in SAMPLES} == set(PAYLOAD_TYPES.values())


def make_event(
    sequence: int,
    payload: Any = None,
    *,
    session_id: str = "sess-1",
    turn_id: str | None = "turn-1",
) -> Event:
    payload = payload if payload is not None else MessageDelta(text="x")
    return Event(
        event_id=f"ev_{session_id}_{sequence}",
        sequence=sequence,
        session_id=session_id,
        turn_id=turn_id,
        harness="echo",
        timestamp="2025-01-01T00:00:00.000001Z",
        type=payload.TYPE,
        payload=payload,
    )


def make_record(session_id: str = "sess-1", created_at: str = "2025-01-01T00:00:00Z") -> Any:
    return SessionRecord(
        ref=SessionRef(provider="echo", target="local", session_id=session_id),
        created_at=created_at,
        updated_at=created_at,
        workspace="/tmp/ws",
        model="m-1",
    )


KINDS = ["memory", "jsonl", "sqlite", "postgresql"]
DURABLE = ["jsonl", "sqlite", "postgresql"]


def url_for(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "postgresql":
        try:
            return str(request.getfixturevalue("postgresql_ledger_url"))
        except pytest.FixtureLookupError:
            pytest.skip("harnessplane-ledger-postgresql is not installed")
    return {
        "memory": "memory:",
        "jsonl": f"jsonl://{tmp_path}/jsonl-ledger",
        "sqlite": f"sqlite://{tmp_path}/ledger.sqlite",
    }[kind]


def open_store(url: str) -> LedgerStore:
    """A store for ``url`` with the schemes the installed plugins register."""
    return open_ledger(url, schemes=get_plugins().ledger_schemes)


def wait_unclaimed(store: LedgerStore, session_id: str, timeout: float = 5.0) -> None:
    """Wait until no live writer holds the session. PostgreSQL drops a killed writer's claim
    when its server process sees the connection closed, milliseconds after the kill; the file
    stores see the owner's process gone at once."""
    deadline = time.monotonic() + timeout
    while store.claimed(session_id) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not store.claimed(session_id), "the dead writer's claim did not end"
