"""Fill a ledger with many recorded sessions, fast, for the viewer's tests and benchmarks.

``fill_ledger(url, 1000)`` writes sessions straight through the ledger store (no harness runs):
each has ``session.opened``, one turn (prompt, streamed answer, a tool call, usage, a terminal)
and, for some, ``session.closed``. Harnesses, states and words vary with the index, so a search,
a filter and paging each have a known answer (:func:`expected`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from harness_hookspecs import Event, SessionRecord, SessionRef, Usage
from harness_hookspecs import events as ev

from ..digests import event_id_prefix
from ..ledger import open_ledger

HARNESSES = ("claude-code", "codex", "opencode", "pi")
#: One in this many sessions is closed; one in ``INTERRUPTED_EVERY`` has a turn left open.
CLOSED_EVERY = 3
INTERRUPTED_EVERY = 10
WORDS = ("README", "tests", "migration", "parser", "logging", "docker", "cache")


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def session_id_of(index: int) -> str:
    return f"{index:08x}-0000-4000-8000-{index:012x}"


def kind_of(index: int) -> dict[str, Any]:
    """The harness, state, prompt and answer of session ``index`` (what the viewer must show)."""
    interrupted = index % INTERRUPTED_EVERY == 1
    closed = not interrupted and index % CLOSED_EVERY == 0
    word = WORDS[index % len(WORDS)]
    return {
        "harness": HARNESSES[index % len(HARNESSES)],
        "state": "interrupted" if interrupted else "closed" if closed else "idle",
        "prompt": f"session {index}: look at the {word} and fix what is wrong",
        "answer": f"Checked the {word} of case n{index}x; all good.",
    }


def expected(count: int, **where: Any) -> list[int]:
    """Indexes of the sessions (newest first) whose :func:`kind_of` matches ``where``."""
    return [i for i in range(count) if all(kind_of(i)[k] == v for k, v in where.items())]


def session_events(index: int, start: datetime) -> list[Event]:
    kind = kind_of(index)
    session_id, turn_id = session_id_of(index), f"turn-{index:06d}"
    payloads: list[tuple[str | None, Any, float]] = [
        (None, ev.SessionOpened(provider=kind["harness"], target="local"), 0.0),
        (turn_id, ev.TurnStarted(prompt=kind["prompt"]), 0.01),
        (turn_id, ev.MessageDelta(text="Looking. "), 0.4),
        (turn_id, ev.ToolStarted(call_id="c1", name="Bash", summary="rg -n TODO src"), 0.5),
        (turn_id, ev.ToolCompleted(call_id="c1", name="Bash", summary="3 matches"), 1.25),
        (turn_id, ev.MessageDelta(text=kind["answer"]), 1.5),
        (
            turn_id,
            ev.UsageReported(
                usage=Usage(input_tokens=1000 + index, output_tokens=50, cost_usd=0.01)
            ),
            1.6,
        ),
    ]
    if kind["state"] != "interrupted":
        payloads.append((turn_id, ev.TurnCompleted(text=None), 2.0))
    if kind["state"] == "closed":
        payloads.append((None, ev.SessionClosed(), 2.1))
    prefix = event_id_prefix(session_id)  # the ids a controller gives them
    return [
        Event(
            event_id=f"{prefix}{sequence}",
            sequence=sequence,
            session_id=session_id,
            turn_id=turn,
            harness=kind["harness"],
            timestamp=stamp(start + timedelta(seconds=offset)),
            type=payload.TYPE,
            payload=payload,
        )
        for sequence, (turn, payload, offset) in enumerate(payloads, start=1)
    ]


def fill_ledger(url: str, count: int, now: datetime | None = None) -> None:
    """Write ``count`` sessions, session ``i`` created ``i`` minutes before ``now``."""
    now = now or datetime.now(UTC)
    store = open_ledger(url)
    try:
        for index in range(count):
            kind = kind_of(index)
            start = now - timedelta(minutes=index)
            ref = SessionRef(kind["harness"], "local", session_id_of(index))
            created = stamp(start)
            store.create_session(
                SessionRecord(
                    ref=ref,
                    status="closed" if kind["state"] == "closed" else "open",
                    created_at=created,
                    updated_at=created,
                    workspace="/tmp/ws",
                )
            )
            store.append(session_events(index, start))
        store.flush()
    finally:
        store.close()
