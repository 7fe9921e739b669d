"""What the recorded timestamps tell about a session's turns: each turn's duration and time to
first token, and each tool call's span (what it ran, what came of it, how long it took).

Read from the events alone, so it is only as good as the ledger's timestamps: a figure the
events do not give (a turn still running, a tool call without its completion) is ``None``.
``static/viewer.js`` computes the same figures from the events that arrive live.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from attrs import define
from harness_hookspecs import Event
from harness_hookspecs import events as ev


def parse_time(timestamp: str | None) -> datetime | None:
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def seconds_between(start: str | None, end: str | None) -> float | None:
    begin, finish = parse_time(start), parse_time(end)
    if begin is None or finish is None:
        return None
    return max((finish - begin).total_seconds(), 0.0)


def duration_text(seconds: float | None) -> str:
    """``0.42 s``, ``3.1 s``, ``2 m 05 s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} m {rest:02d} s"


@define
class ToolCall:
    """One tool call of a turn: ``input`` is what the harness said it ran (the start's summary),
    ``output`` what came of it (the completion's summary)."""

    call_id: str
    name: str
    input: str = ""
    output: str = ""
    ok: bool | None = None  # None: still running (or never completed)
    started_at: str | None = None
    ended_at: str | None = None
    first_sequence: int = 0
    last_sequence: int = 0

    @property
    def seconds(self) -> float | None:
        return seconds_between(self.started_at, self.ended_at)


@define
class TurnTiming:
    started_at: str
    first_output_at: str | None = None  # the first text the harness streamed or completed
    ended_at: str | None = None  # the terminal event's time
    started_sequence: int = 0

    @property
    def seconds(self) -> float | None:
        return seconds_between(self.started_at, self.ended_at)

    @property
    def first_token_seconds(self) -> float | None:
        return seconds_between(self.started_at, self.first_output_at)


@define
class Timings:
    turns: dict[str, TurnTiming]
    #: keyed by (turn id, call id)
    tools: dict[tuple[str, str], ToolCall]


def timings(events: Iterable[Event]) -> Timings:
    turns: dict[str, TurnTiming] = {}
    tools: dict[tuple[str, str], ToolCall] = {}
    for event in events:
        payload, turn_id = event.payload, event.turn_id
        if turn_id is None:
            continue
        if isinstance(payload, ev.TurnStarted):
            turns[turn_id] = TurnTiming(event.timestamp, started_sequence=event.sequence)
            continue
        turn = turns.get(turn_id)
        if turn is None:
            continue
        if isinstance(payload, ev.MessageDelta | ev.MessageCompleted):
            if turn.first_output_at is None and payload.text:
                turn.first_output_at = event.timestamp
        elif isinstance(payload, ev.ToolStarted):
            tools[(turn_id, payload.call_id)] = ToolCall(
                payload.call_id,
                payload.name,
                input=payload.summary or "",
                started_at=event.timestamp,
                first_sequence=event.sequence,
                last_sequence=event.sequence,
            )
        elif isinstance(payload, ev.ToolCompleted):
            call = tools.setdefault(
                (turn_id, payload.call_id),
                ToolCall(payload.call_id, payload.name, first_sequence=event.sequence),
            )
            call.output, call.ok = payload.summary or "", payload.ok
            call.ended_at, call.last_sequence = event.timestamp, event.sequence
        elif event.terminal:
            turn.ended_at = event.timestamp
    return Timings(turns, tools)
