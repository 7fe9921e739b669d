"""Events and records for the PostgreSQL store's own tests."""

from __future__ import annotations

import psycopg
from harness_hookspecs import Event, SessionRecord, SessionRef
from harness_hookspecs.events import MessageDelta
from ledger_postgresql.testing import TemporaryPostgres


def event(sequence: int, text: str = "x", *, session_id: str = "s1", writer: str = "") -> Event:
    return Event(
        event_id=f"ev_{session_id}_{sequence}{writer}",
        sequence=sequence,
        session_id=session_id,
        turn_id="turn-1",
        harness="echo",
        timestamp="2025-01-01T00:00:00.000001Z",
        type="message.delta",
        payload=MessageDelta(text=text),
    )


def record(session_id: str = "s1") -> SessionRecord:
    return SessionRecord(
        ref=SessionRef(provider="echo", target="local", session_id=session_id),
        created_at="2025-01-01T00:00:00Z",
        updated_at="2025-01-01T00:00:00Z",
        workspace="/tmp/ws",
    )


def terminate_everyone(server: TemporaryPostgres) -> int:
    """``pg_terminate_backend`` of every client connection but this one; how many."""
    with psycopg.connect(server.url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)
