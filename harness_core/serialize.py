"""The one cattrs converter: contract models <-> JSON-able dicts.

Loading projects out unknown fields (cattrs ignores extra keys) and re-runs the models'
validators, so a corrupted or foreign ledger row fails loudly with ``ledger-failed``.
"""

from __future__ import annotations

import collections.abc
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any

import cattrs
from harness_hookspecs import (
    PAYLOAD_TYPES,
    Event,
    HarnessDescriptor,
    HarnessError,
    Payload,
    SessionRecord,
)

converter = cattrs.Converter()


def _is_frozenset(t: Any) -> bool:
    return t is frozenset or typing.get_origin(t) is frozenset


def _is_mapping(t: Any) -> bool:
    return t is Mapping or typing.get_origin(t) is collections.abc.Mapping


# frozensets (descriptor targets/features) become sorted lists; MappingProxyType fields dicts.
converter.register_unstructure_hook_func(_is_frozenset, lambda value: sorted(value))
converter.register_unstructure_hook_func(_is_mapping, lambda value: dict(value))
converter.register_structure_hook_func(
    _is_mapping, lambda value, _: dict(value) if isinstance(value, Mapping) else {}
)

_PAYLOAD_UNSTRUCTURE: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    cls: converter.get_unstructure_hook(cls) for cls in PAYLOAD_TYPES.values()
}


def payload_to_dict(payload: Payload) -> dict[str, Any]:
    return _PAYLOAD_UNSTRUCTURE[type(payload)](payload)


def event_to_dict(event: Event) -> dict[str, Any]:
    """The portable shape of an event (also what ``--json`` prints and exports hold)."""
    return {
        "protocol_version": event.protocol_version,
        "event_id": event.event_id,
        "sequence": event.sequence,
        "session_id": event.session_id,
        "turn_id": event.turn_id,
        "harness": event.harness,
        "timestamp": event.timestamp,
        "parent_event_id": event.parent_event_id,
        "type": event.type,
        "payload": _PAYLOAD_UNSTRUCTURE[type(event.payload)](event.payload),
    }


def dumps_event(event: Event) -> str:
    return json.dumps(event_to_dict(event), ensure_ascii=False, separators=(",", ":"))


def event_from_dict(data: Mapping[str, Any]) -> Event:
    try:
        cls = PAYLOAD_TYPES[data["type"]]
        payload = converter.structure(data.get("payload") or {}, cls)
        return Event(
            event_id=str(data["event_id"]),
            sequence=int(data["sequence"]),
            session_id=str(data["session_id"]),
            turn_id=data.get("turn_id"),
            harness=str(data["harness"]),
            timestamp=str(data["timestamp"]),
            type=cls.TYPE,
            payload=payload,
            parent_event_id=data.get("parent_event_id"),
            protocol_version=int(data.get("protocol_version", 1)),
        )
    except (KeyError, TypeError, ValueError, cattrs.BaseValidationError):
        raise HarnessError("ledger-failed", "a stored event could not be read") from None


def loads_event(text: str | bytes) -> Event:
    try:
        data = json.loads(text)
    except ValueError:
        raise HarnessError("ledger-failed", "a stored event is not JSON") from None
    return event_from_dict(data)


def record_to_dict(record: SessionRecord) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(record)
    return data


def record_from_dict(data: Mapping[str, Any]) -> SessionRecord:
    try:
        return converter.structure(dict(data), SessionRecord)
    except (KeyError, TypeError, ValueError, cattrs.BaseValidationError):
        raise HarnessError("ledger-failed", "a stored session could not be read") from None


def descriptor_to_dict(descriptor: HarnessDescriptor) -> dict[str, Any]:
    data: dict[str, Any] = converter.unstructure(descriptor)
    return data
