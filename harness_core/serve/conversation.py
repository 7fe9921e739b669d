"""A session's events folded into what a person reads: turns of prompt, answer, tool calls.

The viewer renders this on the server for the first paint; ``static/viewer.js`` applies the same
rules to the events that arrive live, so both must agree: streamed text is grouped into blocks
split by tool calls; a completed assistant message counts only when nothing was streamed in
the turn; the terminal's text shows only when the turn had no other text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from attrs import define, field
from harness_hookspecs import Event
from harness_hookspecs import events as ev


@define
class Item:
    kind: str  # text | tool | permission | status | artifact
    text: str = ""
    key: str = ""  # call_id / request_id
    name: str = ""
    state: str = ""  # tool: running/ok/error; permission: pending/allow/deny


@define
class TurnView:
    turn_id: str
    prompt: str
    started_at: str
    status: str = "running"
    items: list[Item] = field(factory=list)
    usage: dict[str, Any] = field(factory=dict)
    failure: dict[str, Any] | None = None
    cancelled_by: str | None = None
    streamed: bool = False

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


@define
class Conversation:
    turns: list[TurnView] = field(factory=list)
    closed: bool = False
    last_sequence: int = 0


def fold(events: Iterable[Event]) -> Conversation:
    conversation = Conversation()
    turns: dict[str, TurnView] = {}
    for event in events:
        conversation.last_sequence = event.sequence
        payload = event.payload
        if isinstance(payload, ev.SessionClosed):
            conversation.closed = True
            continue
        if event.turn_id is None:
            continue
        if isinstance(payload, ev.TurnStarted):
            turn = turns[event.turn_id] = TurnView(event.turn_id, payload.prompt, event.timestamp)
            conversation.turns.append(turn)
            continue
        turn_or_none = turns.get(event.turn_id)
        if turn_or_none is not None:
            apply(turn_or_none, payload)
    return conversation


def apply(turn: TurnView, payload: Any) -> None:
    if isinstance(payload, ev.MessageDelta):
        turn.streamed = True
        turn.text(payload.text)
    elif isinstance(payload, ev.MessageCompleted):
        if payload.role == "assistant" and not turn.streamed and payload.text:
            turn.text(payload.text)
    elif isinstance(payload, ev.ToolStarted):
        turn.items.append(
            Item("tool", payload.summary or "", payload.call_id, payload.name, "running")
        )
    elif isinstance(payload, ev.ToolCompleted):
        item = turn.find("tool", payload.call_id)
        if item is None:
            item = Item("tool", "", payload.call_id, payload.name)
            turn.items.append(item)
        item.state = "ok" if payload.ok else "error"
        item.text = payload.summary or item.text
    elif isinstance(payload, ev.PermissionRequested):
        turn.items.append(
            Item("permission", payload.summary, payload.request_id, payload.tool or "", "pending")
        )
    elif isinstance(payload, ev.PermissionResolved):
        item = turn.find("permission", payload.request_id)
        if item is not None:
            item.state = f"{payload.decision} ({payload.source})"
    elif isinstance(payload, ev.Status):
        turn.items.append(Item("status", payload.message))
    elif isinstance(payload, ev.Artifact):
        turn.items.append(Item("artifact", payload.path or "", name=payload.name))
    elif isinstance(payload, ev.UsageReported):
        for key, value in _usage_fields(payload.usage):
            turn.usage[key] = turn.usage.get(key, 0) + value
    elif isinstance(payload, ev.TurnCompleted):
        turn.status = "completed"
        if payload.text and not any(item.kind == "text" for item in turn.items):
            turn.text(payload.text)
    elif isinstance(payload, ev.TurnFailed):
        turn.status = "failed"
        turn.failure = {"reason": payload.reason, "message": payload.message, "hint": payload.hint}
    elif isinstance(payload, ev.TurnCancelled):
        turn.status = "cancelled"
        turn.cancelled_by = payload.by


def _usage_fields(usage: Any) -> list[tuple[str, Any]]:
    names = ("input_tokens", "output_tokens", "cost_usd")
    return [(name, getattr(usage, name)) for name in names if getattr(usage, name) is not None]
