"""Server-sent events: the frame format and the loop that follows a session's ledger.

A follower reads ``ledger.events(after=N)`` in batches and sleeps until the server records more
(the :class:`~harness_core.serve.runner.Hub` wakes it) or :data:`POLL_SECONDS` pass (events
written by another process sharing the ledger). Followers woken together share one read and its
frames (:class:`~harness_core.serve.runner.SharedReads`). Every frame carries the event's sequence
as its ``id``, so a browser's ``EventSource`` reconnects where it stopped (``Last-Event-ID``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from harness_hookspecs import Event

from ..serialize import dumps_event
from .runner import POLL_SECONDS, Server

BATCH = 500
KEEPALIVE_SECONDS = 15.0
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def event_frame(event: Event) -> str:
    # dumps_event escapes newlines and non-ASCII, so the JSON is one safe `data:` line.
    return f"id: {event.sequence}\nevent: {event.type}\ndata: {dumps_event(event)}\n\n"


def end_frame(reason: str, **fields: Any) -> str:
    return f"event: end\ndata: {json.dumps({'reason': reason, **fields})}\n\n"


async def follow(
    server: Server,
    session_id: str,
    after: int,
    *,
    live: bool = True,
    turn_id: str | None = None,
) -> AsyncIterator[str]:
    """Frames for the session's events after ``after``.

    ``turn_id``: stop after that turn's terminal event. ``live``: keep following new events
    until the session closes (else stop at the end of what is recorded).
    """
    last = after
    quiet = 0.0
    while True:
        waiter = server.hub.waiter(session_id)  # before reading: no wake-up is lost
        read = await server.shared_reads.events(session_id, last, BATCH, waiter)
        batch = read.events or []
        if read.frames is None:
            read.frames = [event_frame(event) for event in batch]
        chunk: list[str] = []
        for event, frame in zip(batch, read.frames, strict=True):
            chunk.append(frame)
            last = event.sequence
            if turn_id is not None and event.turn_id == turn_id and event.terminal:
                yield "".join(chunk) + end_frame("turn-finished", status=event.type)
                return
            if event.type == "session.closed" and turn_id is None and live:
                yield "".join(chunk) + end_frame("session-closed")
                return
        if chunk:
            yield "".join(chunk)
            quiet = 0.0
        if len(batch) == BATCH:
            continue
        if not live and turn_id is None:
            yield end_frame("caught-up", last_sequence=last)
            return
        if server.hub.closing:  # after what was recorded: the server is shutting down
            yield end_frame("server-closing", last_sequence=last)
            return
        with anyio.move_on_after(POLL_SECONDS):
            await waiter.wait()
        quiet += POLL_SECONDS if not waiter.is_set() else 0.0
        if quiet >= KEEPALIVE_SECONDS:
            quiet = 0.0
            yield ": keepalive\n\n"
