"""A session's replayable transcript, read back from the ledger.

What a harness needs to rebuild its context after a resume in a new controller or a new process:
per turn the user's input, the final answer (and the structured decision, when the turn had an
output schema) and the tools it used, in order. Built only from events, so it is the same in
every process that reads the same ledger. A retried turn (``turn.restarted``) keeps only its last
attempt's output; runtime-authored retries of a malformed structured answer are not turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import field, frozen
from harness_hookspecs import Event, LedgerStore
from harness_hookspecs.events import (
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    TurnCompleted,
    TurnFailed,
    TurnRestarted,
    TurnStarted,
)

__all__ = ["TranscriptTurn", "history_pairs", "render_transcript", "transcript", "transcript_of"]

_STATUS = {"turn.completed": "completed", "turn.failed": "failed", "turn.cancelled": "cancelled"}


@frozen
class TranscriptTurn:
    """One earlier turn as a harness without native resume would replay it."""

    turn_id: str
    prompt: str
    status: str = "incomplete"
    answer: str | None = None
    output: Any = None
    tools: tuple[str, ...] = field(default=())


class _Builder:
    def __init__(self, turn_id: str, prompt: str) -> None:
        self.turn_id = turn_id
        self.prompt = prompt
        self.status = "incomplete"
        self.reset()

    def reset(self) -> None:
        self.deltas: list[str] = []
        self.messages: list[str] = []
        self.final: str | None = None
        self.output: Any = None
        self.tools: list[str] = []

    def add(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, TurnRestarted):
            self.reset()
        elif isinstance(payload, MessageDelta):
            self.deltas.append(payload.text)
        elif isinstance(payload, MessageCompleted) and payload.role == "assistant":
            self.messages.append(payload.text)
        elif isinstance(payload, ToolCompleted):
            outcome = "ok" if payload.ok else "failed"
            self.tools.append(f"{payload.name} ({outcome}): {payload.summary or ''}".rstrip(": "))
        elif event.type in _STATUS:
            self.status = _STATUS[event.type]
            if isinstance(payload, TurnCompleted):
                self.final, self.output = payload.text, payload.output
            elif isinstance(payload, TurnFailed):
                self.final = None

    def build(self) -> TranscriptTurn:
        answer = self.final
        if answer is None and self.status == "completed":
            answer = self.messages[-1] if self.messages else "".join(self.deltas)
        return TranscriptTurn(
            turn_id=self.turn_id,
            prompt=self.prompt,
            status=self.status,
            answer=answer,
            output=self.output,
            tools=tuple(self.tools),
        )


def transcript_of(events: Sequence[Event]) -> tuple[TranscriptTurn, ...]:
    """The turns of ``events`` (one session's, in sequence order)."""
    builders: dict[str, _Builder] = {}
    for event in events:
        if event.turn_id is None:
            continue
        builder = builders.get(event.turn_id)
        if builder is None:
            if not isinstance(event.payload, TurnStarted):
                continue  # a turn whose opening is not in the slice read
            builder = builders[event.turn_id] = _Builder(event.turn_id, event.payload.prompt)
        builder.add(event)
    return tuple(builder.build() for builder in builders.values())


def transcript(store: LedgerStore, session_id: str) -> tuple[TranscriptTurn, ...]:
    """The replayable transcript of a session's turns, from ``store``."""
    store.flush()
    events = store.events(session_id)
    if any(event.type in _BRANCHING for event in events):
        # a fork replays its parent's turns first; a rewound conversation lacks later turns
        from .branches import conversation_at

        own = {turn.turn_id: turn for turn in transcript_of(events)}
        return tuple(
            own.get(turn.turn_id)
            or TranscriptTurn(
                turn.turn_id,
                turn.prompt,
                "completed" if turn.answer is not None else "failed",
                turn.answer,
            )
            for turn in conversation_at(store, events)
        )
    return transcript_of(events)


_BRANCHING = frozenset({"session.forked", "session.rewound"})


def history_pairs(turns: Sequence[TranscriptTurn]) -> list[tuple[str, str]]:
    """``[("user", prompt), ("assistant", answer), ...]``: a one-function harness's history.

    A turn that did not complete keeps its user input and has no answer (as it was live).
    """
    pairs: list[tuple[str, str]] = []
    for turn in turns:
        pairs.append(("user", turn.prompt))
        if turn.status == "completed":
            pairs.append(("assistant", turn.answer or ""))
    return pairs


def render_transcript(turns: Sequence[TranscriptTurn]) -> str:
    """The transcript as plain text to put ahead of a prompt (context replay)."""
    lines: list[str] = []
    for number, turn in enumerate(turns, 1):
        lines.append(f"[turn {number}] user: {turn.prompt}")
        lines.extend(f"[turn {number}] tool: {tool}" for tool in turn.tools)
        if turn.status == "completed":
            lines.append(f"[turn {number}] assistant: {turn.answer or ''}")
        else:
            lines.append(f"[turn {number}] ({turn.status})")
    return "\n".join(lines)
