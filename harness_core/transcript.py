"""A session's events read as a person (or a replaying harness) reads them: the one place.

Every reader folds events the same way here: ``harness events`` and ``harness run --events``
(:func:`format_event`), the viewer's first paint (:func:`fold`, whose rules ``static/viewer.js``
repeats for live events), and the replayable transcript a resumed harness reads
(:func:`transcript_of`, :func:`history_pairs`, :func:`render_transcript`); numbers, costs and
failures are written as :mod:`harness_core.plain_text` writes them. The rules:

- streamed text is grouped into blocks split by tool calls; a completed assistant message counts
  only when nothing was streamed in the turn; the terminal's text shows only when the turn had
  no other text;
- a retried turn (``turn.restarted``) keeps only its last attempt's text and tools (the usage of
  every attempt was spent, so it adds up);
- the answer of a completed turn is its terminal's text, else its last assistant message, else
  its streamed text; a turn that did not complete has none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from attrs import define, field, frozen
from harness_hookspecs import Event, LedgerStore
from harness_hookspecs import events as ev

from .plain_text import RESTARTED, clip, failure_text, usage_text

__all__ = [
    "Conversation",
    "Item",
    "TranscriptTurn",
    "TurnView",
    "fold",
    "format_event",
    "history_pairs",
    "render_transcript",
    "transcript",
    "transcript_of",
]


# -- one turn, folded ---------------------------------------------------------------------------


@define
class Item:
    """One thing a turn showed, in order."""

    kind: str  # text | thinking | tool | permission | status | step | validation | artifact
    text: str = ""
    key: str = ""  # call_id / request_id
    name: str = ""
    state: str = ""  # tool: running/ok/error; permission: pending/allow (source)/deny (source)


@define
class TurnView:
    """A turn as far as its events go; :func:`fold` builds it and :meth:`apply` extends it."""

    turn_id: str
    prompt: str
    started_at: str
    status: str = "running"
    items: list[Item] = field(factory=list)
    usage: dict[str, Any] = field(factory=dict)
    failure: dict[str, Any] | None = None
    cancelled_by: str | None = None
    streamed: bool = False
    #: The terminal's text and structured output (``turn.completed``).
    final_text: str | None = None
    output: Any = None
    last_message: str | None = None

    def text(self, text: str) -> None:
        last = self.items[-1] if self.items else None
        if last is not None and last.kind == "text":
            last.text += text
        else:
            self.items.append(Item("text", text))

    def find(self, kind: str, key: str) -> Item | None:
        for item in reversed(self.items):
            if item.kind == kind and item.key == key:
                return item
        return None

    @property
    def answer(self) -> str | None:
        """What the turn answered: ``None`` unless it completed."""
        if self.status != "completed":
            return None
        if self.final_text is not None:
            return self.final_text
        if self.last_message is not None:
            return self.last_message
        return "".join(item.text for item in self.items if item.kind == "text")

    def apply(self, payload: Any) -> None:
        """Extend the turn by one of its events' payloads."""
        if isinstance(payload, ev.MessageDelta):
            self.streamed = True
            self.text(payload.text)
        elif isinstance(payload, ev.MessageCompleted):
            if payload.role == "assistant":
                self.last_message = payload.text
                if not self.streamed and payload.text:
                    self.text(payload.text)
        elif isinstance(payload, ev.ToolStarted | ev.ToolCompleted):
            self._tool(payload)
        elif isinstance(payload, ev.PermissionRequested):
            self.items.append(
                Item(
                    "permission", payload.summary, payload.request_id, payload.tool or "", "pending"
                )
            )
        elif isinstance(payload, ev.PermissionResolved):
            item = self.find("permission", payload.request_id)
            if item is not None:
                item.state = f"{payload.decision} ({payload.source})"
        elif isinstance(payload, ev.ThinkingDelta | ev.ThinkingCompleted):
            self._thinking(payload)
        elif isinstance(payload, ev.ModelCompleted):
            self.items.append(Item("step", _detail(payload) or "model call", name="model step"))
        elif isinstance(payload, ev.OutputValidated):
            self.items.append(Item("validation", _detail(payload), state=payload.verdict))
        elif isinstance(payload, ev.Status):
            self.items.append(Item("status", payload.message))
        elif isinstance(payload, ev.Artifact):
            self.items.append(Item("artifact", payload.path or "", name=payload.name))
        elif isinstance(payload, ev.UsageReported):
            for name in ("input_tokens", "output_tokens", "cost_usd"):
                value = getattr(payload.usage, name)
                if value is not None:
                    self.usage[name] = self.usage.get(name, 0) + value
        elif isinstance(payload, ev.TurnRestarted):
            self.items, self.streamed, self.last_message = [], False, None
        else:
            self._end(payload)

    def _thinking(self, payload: ev.ThinkingDelta | ev.ThinkingCompleted) -> None:
        """Thinking: one item a block, its deltas appended, its completion the whole text (or,
        kept out of the ledger, its length)."""
        last = self.items[-1] if self.items else None
        open_block = (
            last if last is not None and last.kind == "thinking" and not last.state else None
        )
        if isinstance(payload, ev.ThinkingDelta):
            if open_block is None:
                self.items.append(Item("thinking", payload.text))
            else:
                open_block.text += payload.text
            return
        text = (
            payload.text
            if payload.text is not None
            else f"({payload.characters} characters, not kept)"
        )
        if open_block is None:
            self.items.append(Item("thinking", text, state="done"))
        else:
            open_block.text, open_block.state = text, "done"

    def _tool(self, payload: ev.ToolStarted | ev.ToolCompleted) -> None:
        if isinstance(payload, ev.ToolStarted):
            self.items.append(
                Item("tool", payload.summary or "", payload.call_id, payload.name, "running")
            )
            return
        item = self.find("tool", payload.call_id)
        if item is None:
            item = Item("tool", "", payload.call_id, payload.name)
            self.items.append(item)
        item.state = "ok" if payload.ok else "error"
        item.text = payload.summary or item.text

    def _end(self, payload: Any) -> None:
        if isinstance(payload, ev.TurnCompleted):
            self.status = "completed"
            self.final_text, self.output = payload.text, payload.output
            if payload.text and not any(item.kind == "text" for item in self.items):
                self.text(payload.text)
        elif isinstance(payload, ev.TurnFailed):
            self.status = "failed"
            self.failure = {
                "reason": payload.reason,
                "message": payload.message,
                "hint": payload.hint,
            }
        elif isinstance(payload, ev.TurnCancelled):
            self.status = "cancelled"
            self.cancelled_by = payload.by


@define
class Conversation:
    """A session's turns in order, whether it is closed, and the last sequence folded."""

    turns: list[TurnView] = field(factory=list)
    closed: bool = False
    last_sequence: int = 0


def fold(events: Iterable[Event]) -> Conversation:
    """``events`` (one session's, in sequence order) folded into its turns. A turn whose
    ``turn.started`` is not among them is left out."""
    conversation = Conversation()
    turns: dict[str, TurnView] = {}
    for event in events:
        conversation.last_sequence = event.sequence
        payload = event.payload
        if isinstance(payload, ev.SessionClosed):
            conversation.closed = True
        elif event.turn_id is None:
            continue
        elif isinstance(payload, ev.TurnStarted):
            turn = turns[event.turn_id] = TurnView(event.turn_id, payload.prompt, event.timestamp)
            conversation.turns.append(turn)
        elif event.turn_id in turns:
            turns[event.turn_id].apply(payload)
    return conversation


# -- the replayable transcript --------------------------------------------------------------------


@frozen
class TranscriptTurn:
    """One earlier turn as a harness without native resume would replay it."""

    turn_id: str
    prompt: str
    status: str = "incomplete"
    answer: str | None = None
    output: Any = None
    tools: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, turn: TurnView) -> TranscriptTurn:
        tools = tuple(
            f"{item.name} ({'ok' if item.state == 'ok' else 'failed'}): {item.text}".rstrip(": ")
            for item in turn.items
            if item.kind == "tool" and item.state in ("ok", "error")
        )
        status = "incomplete" if turn.status == "running" else turn.status
        output = turn.output if turn.status == "completed" else None
        return cls(turn.turn_id, turn.prompt, status, turn.answer, output, tools)


def transcript_of(events: Iterable[Event]) -> tuple[TranscriptTurn, ...]:
    """The turns of ``events`` (one session's, in sequence order)."""
    return tuple(TranscriptTurn.of(turn) for turn in fold(events).turns)


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


# -- one event, one line --------------------------------------------------------------------------


def format_event(event: Event) -> str:
    """One readable line per event: sequence, type and what it says."""
    return f"{event.sequence:>5}  {event.type:<21} {_detail(event.payload)}".rstrip()


def _detail(p: Any) -> str:
    if isinstance(p, ev.SessionOpened):
        return f"{p.harness} ({p.target}) posture={p.posture} sandbox={p.sandbox}"
    if isinstance(p, ev.SessionResumed):
        return f"{p.harness} ({p.target})"
    if isinstance(p, ev.TurnStarted):
        return clip(p.prompt)
    if isinstance(p, ev.TurnRestarted):
        return f"attempt {p.attempt}: {RESTARTED}"
    if isinstance(p, ev.MessageDelta):
        return clip(p.text)
    if isinstance(p, ev.MessageCompleted):
        return f"[{p.role}] {clip(p.text)}"
    if isinstance(p, ev.ToolStarted | ev.ToolCompleted):
        status = "" if isinstance(p, ev.ToolStarted) else (" ok" if p.ok else " error")
        return f"{p.name}{status}" + (f" - {p.summary}" if p.summary else "")
    if isinstance(p, ev.PermissionRequested):
        return f"{p.request_id} {p.summary}"
    if isinstance(p, ev.PermissionResolved):
        return f"{p.request_id} {p.decision} by {p.source}"
    if isinstance(p, ev.UsageReported):
        return usage_text(p.usage) or "-"
    if isinstance(p, ev.Status):
        return p.message
    if isinstance(p, ev.Artifact):
        return p.name + (f" {p.path}" if p.path else "")
    if isinstance(p, ev.TurnCompleted):
        if p.output is not None:
            return "output " + clip(json.dumps(p.output, ensure_ascii=False))
        return clip(p.text or "")
    if isinstance(p, ev.TurnFailed):
        return failure_text(p.reason, p.message, p.hint)
    if isinstance(p, ev.TurnCancelled):
        return f"by {p.by}"
    if isinstance(p, ev.ThinkingDelta):
        return clip(p.text)
    if isinstance(p, ev.ThinkingCompleted):
        return clip(p.text) if p.text is not None else f"({p.characters} characters, not kept)"
    if isinstance(p, ev.ModelRequested | ev.ModelCompleted):
        step = p.model or ""
        if isinstance(p, ev.ModelCompleted):
            usage = usage_text(p.usage) if p.usage is not None else ""
            ms = f"{p.duration_ms} ms" if p.duration_ms is not None else ""
            step = " ".join(part for part in (step, usage, ms) if part)
        return step
    if isinstance(p, ev.OutputValidated):
        verdict = f"attempt {p.attempt} {p.verdict}"
        return verdict + (f": {p.reason}" if p.reason else "")
    return ""
