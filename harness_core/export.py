"""Portable export: a JSON bundle of one session, built only from the ledger.

``{"format": "harness-core.export", "version": 1, "exported_at", "session": record, "turns":
[{turn_id, status (completed/failed/cancelled/running/interrupted), started_sequence,
terminal_sequence, text, usage[, output][, reason][, attempt]}], "usage", "events":
[event_to_dict...]}``; ``output`` is the parsed decision of a turn run with an output schema;
``usage`` (per turn and for the session) is the sum of the usage reports, ``None`` when none
was reported. A turn's ``text``
is the terminal's text when it has one, else its streamed deltas, else its completed assistant
messages; a retried turn (``turn.restarted``) keeps only its last attempt's output and says which
attempt that was. A turn without a terminal is ``running`` while a live process holds the session and
``interrupted`` when none does (its process died; the next resume records that in the ledger).
A session that delegated (:mod:`.delegation`) also has ``children`` (each child's bundle, without
``format``/``version``/``exported_at``, its own children inside) and ``total_usage`` (its usage
and every descendant's).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
from harness_hookspecs import (
    HarnessError,
    LedgerStore,
    MessageDelta,
    TurnCompleted,
    Usage,
    UsageReported,
)
from harness_hookspecs.events import MessageCompleted, TurnFailed, TurnRestarted

from .budgets import add_usage
from .serialize import event_to_dict, record_to_dict

EXPORT_FORMAT = "harness-core.export"
EXPORT_VERSION = 1

_STATUS = {"turn.completed": "completed", "turn.failed": "failed", "turn.cancelled": "cancelled"}


def open_turn(store: LedgerStore, session_id: str) -> str | None:
    """``running`` or ``interrupted`` when the session's last turn has no terminal, else None."""
    from .retry import dangling_turn

    if dangling_turn(store, session_id, store.last_sequence(session_id)) is None:
        return None
    return "running" if store.claimed(session_id) else "interrupted"


def session_state(status: str, turn: str | None) -> str:
    """What a session is doing, for people: ``running`` (a turn is under way in a live
    process), ``interrupted`` (open, its last turn left without a terminal by a process that is
    gone: the next resume or ``harness close`` ends that turn), ``idle`` (open, waiting for its
    next turn - every ``harness run`` without ``--close`` leaves one so, resumable), or
    ``closed``. ``turn`` is :func:`open_turn`'s answer."""
    if status == "closed":
        return "closed"
    if turn in ("running", "interrupted"):
        return turn
    return "idle"


def usage_dict(usage: Usage | None) -> dict[str, Any] | None:
    """Summed usage as JSON (``None``: nothing reported; a ``None`` field: unknown)."""
    return None if usage is None else attrs.asdict(usage)


def export_session(store: LedgerStore, session_id: str) -> dict[str, Any]:
    record = store.get_session(session_id)
    if record is None:
        raise HarnessError("session-not-found")
    events = store.events(session_id)
    turns: dict[str, dict[str, Any]] = {}
    messages: dict[str, list[str]] = {}
    usage: dict[str | None, Usage | None] = {None: None}  # per turn; None: the session's
    for event in events:
        if isinstance(event.payload, UsageReported):  # every report counts (it was spent)
            usage[None] = add_usage(usage[None], event.payload.usage)
            usage[event.turn_id] = add_usage(usage.get(event.turn_id), event.payload.usage)
        if event.turn_id is None:
            continue
        turn = turns.get(event.turn_id)
        if turn is None:
            turn = turns[event.turn_id] = {
                "turn_id": event.turn_id,
                "status": None,
                "started_sequence": event.sequence,
                "terminal_sequence": None,
                "text": "",
            }
        if isinstance(event.payload, TurnRestarted):  # the abandoned attempt's output is void
            turn["text"], turn["attempt"] = "", event.payload.attempt
            messages.pop(event.turn_id, None)
        elif isinstance(event.payload, MessageDelta):
            turn["text"] += event.payload.text
        elif isinstance(event.payload, MessageCompleted) and event.payload.role == "assistant":
            messages.setdefault(event.turn_id, []).append(event.payload.text)
        elif event.type in _STATUS:
            turn["status"] = _STATUS[event.type]
            turn["terminal_sequence"] = event.sequence
            if isinstance(event.payload, TurnCompleted) and event.payload.text is not None:
                turn["text"] = event.payload.text
            if isinstance(event.payload, TurnCompleted) and event.payload.output is not None:
                turn["output"] = event.payload.output
            if isinstance(event.payload, TurnFailed):
                turn["reason"] = event.payload.reason
    open_status = "running" if store.claimed(session_id) else "interrupted"
    for turn in turns.values():
        if turn["status"] is None:
            turn["status"] = open_status
        turn["usage"] = usage_dict(usage.get(turn["turn_id"]))
    for turn_id, texts in messages.items():
        if not turns[turn_id]["text"]:
            turns[turn_id]["text"] = "\n".join(texts)
    bundle: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "session": record_to_dict(record),
        "usage": usage_dict(usage[None]),
        "turns": list(turns.values()),
        "events": [event_to_dict(event) for event in events],
    }
    _add_children(store, session_id, bundle, usage[None])
    return bundle


def _add_children(
    store: LedgerStore, session_id: str, bundle: dict[str, Any], own: Usage | None
) -> None:
    """A session that delegated: its child sessions' bundles (their children in them) under
    ``children``, and ``total_usage``, its own usage and every descendant's."""
    from .delegation import children_of

    records = children_of(store, session_id)
    if not records:
        return
    children = []
    total = own
    for record in records:
        child = export_session(store, record.session_id)
        for key in ("format", "version", "exported_at"):
            child.pop(key)
        total = add_usage(total, _usage_of(child.get("total_usage", child["usage"])))
        children.append(child)
    bundle["total_usage"] = usage_dict(total)
    bundle["children"] = children


def _usage_of(data: dict[str, Any] | None) -> Usage | None:
    return None if data is None else Usage(**data)
