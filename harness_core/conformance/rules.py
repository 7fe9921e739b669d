"""The contract's rules for one payload or one value, shared by the probe and the checks."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import attrs
from harness_hookspecs import PAYLOAD_TYPES, Usage
from harness_hookspecs.bounds import MAX_SAFE_INTEGER

from ..clock import timestamp_ok as timestamp_ok  # re-exported: the checks import it here
from ..serialize import converter, payload_to_dict

#: Payload class -> its canonical event type.
CANONICAL = {cls: event_type for event_type, cls in PAYLOAD_TYPES.items()}
SESSION_TYPES = frozenset(
    {
        "session.opened",
        "session.resumed",
        "session.closed",
        "session.forked",
        "session.rewound",
        "checkpoint.created",
        "checkpoint.skipped",
    }
)
ENVELOPE_KEYS = frozenset(
    {
        "protocol_version",
        "event_id",
        "sequence",
        "session_id",
        "turn_id",
        "harness",
        "timestamp",
        "parent_event_id",
        "type",
        "payload",
    }
)


def payload_problem(payload: Any) -> str | None:
    """Why a canonical payload is out of bounds or does not survive serialization, or None."""
    try:
        attrs.validate(payload)
    except (TypeError, ValueError) as error:
        return clip(str(error).splitlines()[0] if str(error) else type(error).__name__)
    try:
        data = payload_to_dict(payload)
        text = json.dumps(data, allow_nan=False)
        again = converter.structure(json.loads(text), type(payload))
    except Exception as error:
        return f"does not serialize ({type(error).__name__})"
    if payload_to_dict(again) != data:
        return "changes when serialized and read back (a field has the wrong type)"
    return None


def usage_problem(usage: Any) -> str | None:
    """Why a usage value is not a valid :class:`Usage`, or None."""
    if type(usage) is not Usage:
        return f"usage is a {type(usage).__name__}, not Usage"
    for attribute in attrs.fields(Usage):
        value = getattr(usage, attribute.name)
        if value is None:
            continue
        if attribute.name == "cost_estimated":
            if not isinstance(value, bool):
                return "cost_estimated is not a boolean"
            continue
        if attribute.name == "cost_usd":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "cost_usd is not a number"
            if not (0 <= value < math.inf):
                return "cost_usd is negative or not finite"
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{attribute.name} is not an integer ({type(value).__name__})"
        if not 0 <= value <= MAX_SAFE_INTEGER:
            return f"{attribute.name} is negative or beyond the safe integer range"
    return None


def describe_item(item: Any) -> str:
    """How a report names an item an adapter yielded: its event type, else its class."""
    event_type = getattr(type(item), "TYPE", None)
    return repr(event_type) if isinstance(event_type, str) else type(item).__name__


def clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def span(values: Sequence[int]) -> str:
    """A short rendering of a list of sequence numbers."""
    if len(values) <= 8:
        return str(list(values))
    return f"[{values[0]}, {values[1]}, ..., {values[-1]}] ({len(values)})"
