"""Seed 001's event names (SuperQode's Harness Protocol v1, and its older underscore-style
kernel names) accepted at the input boundary and normalized to ours: the one table.

Where a program or a bundle speaks the peer's vocabulary (a ``stdio-jsonl`` program, ``harness
import``), :func:`normalize_event` turns a type and its fields into ours before the closed
union is consulted. Inside the runtime, the ledger and every export only our names exist. A
name in neither vocabulary stays unknown (the union refuses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: seed 001 name -> our event type (a name we share maps to itself and is not listed)
SEED_001_NAMES: Mapping[str, str] = {
    # Harness Protocol v1
    "run.started": "turn.started",
    "run.completed": "turn.completed",
    "run.failed": "turn.failed",
    "run.cancelled": "turn.cancelled",
    "message.created": "message.completed",
    "model.thinking": "thinking.completed",
    "tool.requested": "tool.started",
    "approval.requested": "permission.requested",
    "approval.resolved": "permission.resolved",
    "artifact.created": "artifact",
    "validation.completed": "output.validated",
    # the older underscore-style kernel names
    "run_start": "turn.started",
    "run_end": "turn.completed",
    "model_request": "model.requested",
    "model_result": "model.completed",
    "model_delta": "message.delta",
    "delta": "message.delta",
    "thinking": "thinking.completed",
    "tool_call": "tool.started",
    "tool_result": "tool.completed",
    "approval_required": "permission.requested",
    "approval_decision": "permission.resolved",
    "approval_resumed": "permission.resolved",
}

#: our event type -> its Harness Protocol v1 name, where v1 has one (what a v1 bundle or a v1
#: adapter is given; a type not listed has no v1 counterpart and goes out as ``adapter.<type>``)
V1_NAMES: Mapping[str, str] = {
    "turn.started": "run.started",
    "turn.completed": "run.completed",
    "turn.failed": "run.failed",
    "turn.cancelled": "run.cancelled",
    "message.completed": "message.created",
    "message.delta": "message.delta",
    "model.requested": "model.requested",
    "model.completed": "model.completed",
    "thinking.completed": "model.thinking",
    "tool.started": "tool.requested",
    "tool.completed": "tool.completed",
    "permission.requested": "approval.requested",
    "permission.resolved": "approval.resolved",
    "artifact": "artifact.created",
    "checkpoint.created": "checkpoint.created",
    "output.validated": "validation.completed",
}

#: seed 001 field name -> ours, applied to a renamed event's fields (a field ours already
#: has wins over its seed-001 synonym)
SEED_001_FIELDS: Mapping[str, str] = {
    "content": "text",
    "delta": "text",
    "tool_call_id": "call_id",
    "tool_name": "name",
    "approval_id": "request_id",
}

#: the underscore ``run_end``'s ``status`` that makes it another terminal
_RUN_END_STATUS = {"failed": "turn.failed", "error": "turn.failed", "cancelled": "turn.cancelled"}


def normalize_event(event_type: str, fields: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Our type and fields for ``event_type`` (ours, or a seed-001 name) and its fields."""
    ours = SEED_001_NAMES.get(event_type)
    if ours is None:
        return event_type, dict(fields)
    if event_type == "run_end":
        status = str(fields.get("status") or "").lower()
        ours = _RUN_END_STATUS.get(status, ours)
    renamed = dict(fields)
    for theirs, mine in SEED_001_FIELDS.items():
        if theirs in renamed and mine not in renamed:
            renamed[mine] = renamed.pop(theirs)
    return ours, renamed
