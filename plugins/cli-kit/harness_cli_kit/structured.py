"""Structured output helpers for CLI adapters: a schema a strict vendor accepts, and back.

OpenAI's strict ``json_schema`` (Codex ``--output-schema``) takes only objects that close
``additionalProperties`` and require every property. :func:`strict_schema` rewrites a host's
schema that way, making each optional property nullable instead; :func:`drop_optional_nulls`
removes those nulls from the answer again, so the runtime validates what the host's own schema
means. :func:`parsed_json` reads an answer text as JSON (the runtime validates it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_NESTED = ("items", "additionalItems", "not", "if", "then", "else", "contains")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def strict_schema(schema: Any) -> Any:
    """``schema`` with every object closed and every property required (optional -> nullable)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {key: strict_schema(value) for key, value in schema.items()}
    for key in _NESTED:
        if key in schema:
            out[key] = strict_schema(schema[key])
    for key in _LISTS:
        if isinstance(schema.get(key), list):
            out[key] = [strict_schema(item) for item in schema[key]]
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), Mapping):
            out[key] = {name: strict_schema(sub) for name, sub in schema[key].items()}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        required = set(schema.get("required") or ())
        out["properties"] = {
            name: strict_schema(sub)
            if name in required
            else {"anyOf": [strict_schema(sub), {"type": "null"}]}
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
    if out.get("type") == "object" or isinstance(properties, Mapping):
        out["additionalProperties"] = False
    return out


def drop_optional_nulls(value: Any, schema: Any) -> Any:
    """Remove the ``null`` a strict vendor gave for a property the host's schema left optional."""
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = set(schema.get("required") or ())
        return {
            key: drop_optional_nulls(item, properties.get(key))
            for key, item in value.items()
            if not (item is None and key in properties and key not in required)
        }
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [drop_optional_nulls(item, schema["items"]) for item in value]
    return value


def parsed_json(text: str | None) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is one JSON value, else ``(False, None)``."""
    if not text:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None
