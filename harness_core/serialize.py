"""The one cattrs converter: contract models <-> JSON-able dicts (and JSON text).

``converter`` is the only converter of the project; everything else here is built on it:

- ``event_to_dict`` / ``event_from_dict``: the portable shape of an event (what ``--json`` prints
  and exports hold). Loading picks the payload class by ``type`` from ``PAYLOAD_TYPES``, drops
  unknown keys (projected out, at the envelope and the payload level) and re-runs the payload
  validators, so a corrupted or foreign row fails loudly with ``ledger-failed``; an unknown
  ``type`` is ``ledger-failed`` too (the union is closed).
- ``dumps_event`` / ``payload_json``: compact one-line JSON text. This is the ledger's hot path,
  so the text is built by a function generated once per payload class from its attrs fields
  (string concatenation around the C string escaper), which is ~20x cheaper than
  ``json.dumps(converter.unstructure(...))``; fields of a type the generator doesn't know fall
  back to the converter plus the C encoder. Tests check both paths give the same JSON for every
  payload type. Non-ASCII is written as ``\\uXXXX`` escapes, so any str (even a lone surrogate)
  encodes and the text is pure ASCII.
- ``record_to_dict`` / ``record_from_dict`` (``SessionRecord``), ``descriptor_to_dict``;
  ``dumps_record`` uses a generated function too (falling back to the converter for a value of
  a type the record does not declare).

Nothing is built at import: the converter (and ``cattrs`` itself, ~10 ms) when first needed -
writing events whose fields are strings, numbers, booleans, ``None`` or ``Usage`` never needs
it - and each per-class function on first use. ``converter`` stays a module attribute.
"""

from __future__ import annotations

import collections.abc
import json
import threading
import typing
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii as _escape
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from harness_hookspecs import (
    PAYLOAD_TYPES,
    Event,
    HarnessDescriptor,
    HarnessError,
    Payload,
    SessionRecord,
    SessionRef,
    Usage,
)

if TYPE_CHECKING:
    import cattrs

    converter: cattrs.Converter

_converter: list[cattrs.Converter] = []
_converter_lock = threading.Lock()


def _get_converter() -> cattrs.Converter:
    """The converter, built (and ``cattrs`` imported) on first use (once: the ledger's writer
    thread may ask at the same time as the event loop)."""
    if _converter:
        return _converter[0]
    with _converter_lock:
        if _converter:
            return _converter[0]
        import cattrs

        built = cattrs.Converter()
        # frozensets (descriptor targets/features) become sorted lists; MappingProxyType fields
        # dicts.
        built.register_unstructure_hook_func(_is_frozenset, lambda value: sorted(value))
        built.register_unstructure_hook_func(_is_mapping, lambda value: dict(value))
        built.register_structure_hook_func(
            _is_mapping, lambda value, _: dict(value) if isinstance(value, Mapping) else {}
        )
        _converter.append(built)
    return _converter[0]


def __getattr__(name: str) -> Any:
    if name == "converter":
        return _get_converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _cattrs_error() -> type[BaseException]:
    """What a failed structure hook raises besides the builtin errors (evaluated only while an
    exception is matched, so ``cattrs`` is not imported for a successful read)."""
    import cattrs

    return cattrs.BaseValidationError


def _is_frozenset(t: Any) -> bool:
    return t is frozenset or typing.get_origin(t) is frozenset


def _is_mapping(t: Any) -> bool:
    return t is Mapping or typing.get_origin(t) is collections.abc.Mapping


#: Compact, ASCII-only JSON (the C encoder, built once: ``json.dumps`` rebuilds it per call).
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode

# -- per-payload-class functions, generated once -------------------------------------------------

_PAYLOAD_CLASSES = frozenset(PAYLOAD_TYPES.values())


_F = TypeVar("_F")


class _PerClass(dict[type[Any], _F]):
    """``{class: function}`` for the given classes, each function made on first lookup (a
    class outside them is a ``KeyError``, as with a table built in advance)."""

    def __init__(self, classes: frozenset[type[Any]], make: Callable[[type[Any]], _F]) -> None:
        super().__init__()
        self._classes = classes
        self._make = make

    def __missing__(self, cls: type[Any]) -> _F:
        if cls not in self._classes:
            raise KeyError(cls)
        function = self[cls] = self._make(cls)
        return function


_PAYLOAD_UNSTRUCTURE: _PerClass[Callable[[Any], dict[str, Any]]] = _PerClass(
    _PAYLOAD_CLASSES, lambda cls: _get_converter().get_unstructure_hook(cls)
)
_PAYLOAD_STRUCTURE: _PerClass[Callable[[Any, Any], Any]] = _PerClass(
    _PAYLOAD_CLASSES, lambda cls: _make_structure(cls) or _get_converter().get_structure_hook(cls)
)
#: JSON scalars: the converter returns them unchanged, so they need no converter.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _fallback(value: Any) -> str:
    if type(value) in _SCALARS:
        return _encode(value)
    if type(value) in _NESTED_CLASSES:
        text: str = _NESTED_JSON[type(value)](value)
        return text
    if type(value) is MappingProxyType:  # a record's config: JSON already, as the converter gives
        try:
            return _encode(dict(value))
        except (TypeError, ValueError):
            pass
    return _encode(_get_converter().unstructure(value))


def _field_expr(name: str, annotation: Any) -> str:
    """A Python expression producing the JSON text of ``p.<name>`` for the declared type."""
    get = f"p.{name}"
    if annotation in (str, "str"):
        return f"_escape({get})"
    if annotation in ("str | None", "Optional[str]"):
        return f"('null' if {get} is None else _escape({get}))"
    if annotation in (bool, "bool"):
        return f"('true' if {get} else 'false')"
    if annotation in (int, "int"):
        return f"_int({get})"
    if annotation in ("int | None", "Optional[int]"):
        return f"('null' if {get} is None else _int({get}))"
    return f"_fallback({get})"


class _Unreadable(ValueError):
    """A generated structure function's failure (what the converter's hook raises as a
    ``ClassValidationError``): callers turn either into ``ledger-failed``."""


#: How the converter structures a field of each declared type (``str(value)`` and the like;
#: ``None`` passes for an optional type; ``Any`` passes as is).
_STRUCTURE_EXPRS: dict[Any, str] = {
    "Any": "{get}",
    "str": "str({get})",
    "str | None": "(None if (v := {get}) is None else str(v))",
    "int": "int({get})",
    "int | None": "(None if (v := {get}) is None else int(v))",
    "bool": "bool({get})",
}
# The same types once resolved (the converter resolves a class's string annotations in place).
_STRUCTURE_EXPRS.update(
    {
        str: _STRUCTURE_EXPRS["str"],
        int: _STRUCTURE_EXPRS["int"],
        bool: _STRUCTURE_EXPRS["bool"],
        str | None: _STRUCTURE_EXPRS["str | None"],
        int | None: _STRUCTURE_EXPRS["int | None"],
        typing.Optional[str]: _STRUCTURE_EXPRS["str | None"],  # noqa: UP045 - what resolving gives
        typing.Optional[int]: _STRUCTURE_EXPRS["int | None"],  # noqa: UP045
    }
)


def _make_structure(cls: type[Any]) -> Callable[[Any, Any], Any] | None:
    """A function structuring ``cls`` from a dict as the converter's generated hook does (same
    lookups in the same order, same conversions, unknown keys ignored, any failure an error),
    for classes whose fields are all of the types above; ``None`` for any other class."""
    lines = ["def structure(o, _):", "    res = {}", "    try:"]
    for attribute in attrs.fields(cls):
        annotation = "Any" if attribute.type is Any else attribute.type
        if attribute.alias != attribute.name or annotation not in _STRUCTURE_EXPRS:
            return None
        key = repr(attribute.name)
        value = _STRUCTURE_EXPRS[annotation].format(get=f"o[{key}]")
        if attribute.default is attrs.NOTHING:
            lines.append(f"        res[{key}] = {value}")
        else:
            lines.append(f"        if {key} in o: res[{key}] = {value}")
    lines += [
        "        return cls(**res)",
        "    except Exception:",
        "        raise _Unreadable from None",
    ]
    namespace: dict[str, Any] = {"cls": cls, "_Unreadable": _Unreadable}
    exec(compile("\n".join(lines) + "\n", f"<structure {cls.__name__}>", "exec"), namespace)
    function: Callable[[Any, Any], Any] = namespace["structure"]
    return function


def _make_payload_json(cls: type[Any]) -> Callable[[Any], str]:
    fields = attrs.fields(cls)
    if not fields:
        return lambda p: "{}"
    parts = []
    for position, attribute in enumerate(fields):
        key = ("{" if position == 0 else ",") + json.dumps(attribute.name) + ":"
        parts.append(f"{key!r} + {_field_expr(attribute.name, attribute.type)}")
    source = f"def payload_json(p):\n    return {' + '.join(parts)} + '}}'\n"
    namespace: dict[str, Any] = {"_escape": _escape, "_int": int.__repr__, "_fallback": _fallback}
    exec(compile(source, f"<payload_json {cls.__name__}>", "exec"), namespace)
    function: Callable[[Any], str] = namespace["payload_json"]
    return function


_PAYLOAD_JSON: _PerClass[Callable[[Any], str]] = _PerClass(_PAYLOAD_CLASSES, _make_payload_json)
#: Contract classes nested in payloads and records, written by generated functions as well
#: (``Usage`` in ``usage.reported``, ``SessionRef`` in a record); for values of the declared
#: types these give the converter's JSON.
_NESTED_CLASSES = frozenset({Usage, SessionRef})
_NESTED_JSON: _PerClass[Callable[[Any], str]] = _PerClass(_NESTED_CLASSES, _make_payload_json)

# -- payloads and events ------------------------------------------------------------------------


def payload_to_dict(payload: Payload) -> dict[str, Any]:
    return _PAYLOAD_UNSTRUCTURE[type(payload)](payload)


def payload_json(payload: Payload) -> str:
    """The compact JSON text of a payload (same content as ``payload_to_dict``)."""
    return _PAYLOAD_JSON[type(payload)](payload)


def payload_from_dict(event_type: str, data: Any) -> Payload:
    """Structure a payload of ``event_type``; unknown keys are dropped, validators re-run."""
    try:
        cls = PAYLOAD_TYPES[event_type]
        if not isinstance(data, Mapping):
            raise TypeError("payload is not an object")
        payload: Payload = _PAYLOAD_STRUCTURE[cls](data, cls)
        return payload
    except (KeyError, TypeError, ValueError, _cattrs_error()):
        raise HarnessError("ledger-failed", "a stored event could not be read") from None


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
    """``event_to_dict(event)`` as compact one-line JSON (same keys, same order)."""
    turn_id = event.turn_id
    parent = event.parent_event_id
    return (
        '{"protocol_version":'
        + int.__repr__(event.protocol_version)
        + ',"event_id":'
        + _escape(event.event_id)
        + ',"sequence":'
        + int.__repr__(event.sequence)
        + ',"session_id":'
        + _escape(event.session_id)
        + ',"turn_id":'
        + ("null" if turn_id is None else _escape(turn_id))
        + ',"harness":'
        + _escape(event.harness)
        + ',"timestamp":'
        + _escape(event.timestamp)
        + ',"parent_event_id":'
        + ("null" if parent is None else _escape(parent))
        + ',"type":'
        + _escape(event.type)
        + ',"payload":'
        + _PAYLOAD_JSON[type(event.payload)](event.payload)
        + "}"
    )


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild an event; unknown keys are dropped, an unknown ``type`` is ``ledger-failed``."""
    try:
        event_type = data["type"]
        cls = PAYLOAD_TYPES[event_type]
        payload = _PAYLOAD_STRUCTURE[cls](data.get("payload") or {}, cls)
        turn_id = data.get("turn_id")
        parent = data.get("parent_event_id")
        return Event(
            event_id=str(data["event_id"]),
            sequence=int(data["sequence"]),
            session_id=str(data["session_id"]),
            turn_id=None if turn_id is None else str(turn_id),
            harness=str(data["harness"]),
            timestamp=str(data["timestamp"]),
            type=cls.TYPE,
            payload=payload,
            parent_event_id=None if parent is None else str(parent),
            protocol_version=int(data.get("protocol_version", 1)),
        )
    except (KeyError, TypeError, ValueError, AttributeError, _cattrs_error()):
        raise HarnessError("ledger-failed", "a stored event could not be read") from None


def loads_event(text: str | bytes) -> Event:
    """``event_from_dict(json.loads(text))``; bad JSON is ``ledger-failed``."""
    try:
        data = json.loads(text)
    except ValueError:
        raise HarnessError("ledger-failed", "a stored event is not JSON") from None
    if not isinstance(data, Mapping):
        raise HarnessError("ledger-failed", "a stored event is not a JSON object")
    return event_from_dict(data)


# -- sessions and descriptors -------------------------------------------------------------------

_RECORD_UNSTRUCTURE: _PerClass[Callable[[Any], dict[str, Any]]] = _PerClass(
    frozenset({SessionRecord}), lambda cls: _get_converter().get_unstructure_hook(cls)
)
_RECORD_STRUCTURE: _PerClass[Callable[[Any, Any], Any]] = _PerClass(
    frozenset({SessionRecord}), lambda cls: _get_converter().get_structure_hook(cls)
)
_RECORD_JSON: _PerClass[Callable[[Any], str]] = _PerClass(
    frozenset({SessionRecord}), _make_payload_json
)


def record_to_dict(record: SessionRecord) -> dict[str, Any]:
    data: dict[str, Any] = _RECORD_UNSTRUCTURE[SessionRecord](record)
    return data


def dumps_record(record: SessionRecord) -> str:
    try:
        text: str = _RECORD_JSON[SessionRecord](record)
    except TypeError:  # a value not of its declared type: the converter's JSON, or its error
        return _encode(_RECORD_UNSTRUCTURE[SessionRecord](record))
    return text


def record_from_dict(data: Mapping[str, Any]) -> SessionRecord:
    """Rebuild a session record; unknown keys are dropped; bad data is ``ledger-failed``."""
    try:
        if not isinstance(data, Mapping):
            raise TypeError("record is not an object")
        record: SessionRecord = _RECORD_STRUCTURE[SessionRecord](data, SessionRecord)
        return record
    except (KeyError, TypeError, ValueError, AttributeError, _cattrs_error()):
        raise HarnessError("ledger-failed", "a stored session could not be read") from None


def loads_record(text: str | bytes) -> SessionRecord:
    try:
        data = json.loads(text)
    except ValueError:
        raise HarnessError("ledger-failed", "a stored session is not JSON") from None
    return record_from_dict(data)


def descriptor_to_dict(descriptor: HarnessDescriptor) -> dict[str, Any]:
    data: dict[str, Any] = _get_converter().unstructure(descriptor)
    return data


__all__ = [
    "converter",
    "descriptor_to_dict",
    "dumps_event",
    "dumps_record",
    "event_from_dict",
    "event_to_dict",
    "loads_event",
    "loads_record",
    "payload_from_dict",
    "payload_json",
    "payload_to_dict",
    "record_from_dict",
    "record_to_dict",
]
