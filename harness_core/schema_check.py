"""Is this JSON object a JSON Schema, or some other JSON (an export bundle, a config)?

``jsonschema``'s meta-schema accepts any object (unknown keywords are allowed), so a file
that is not a schema at all would "validate" every answer. A host's output schema is checked
here as well: every top-level key must be a keyword of the schema's own dialect (validation,
core or annotation) or an ``x-`` extension; and its references must stay inside it
(:func:`reference_problem`: ``jsonschema`` fetches another document's URL over the network).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

_REFERENCE_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")

#: Keywords that validate nothing but belong to a schema (core and annotation vocabularies).
_CORE_AND_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor",
        "$recursiveRef", "$recursiveAnchor", "$vocabulary", "$comment", "id", "definitions",
        "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "format", "contentMediaType", "contentEncoding", "contentSchema",
    }
)  # fmt: skip


def foreign_keywords(schema: Mapping[str, Any], validator_class: Any) -> list[str]:
    """The top-level keys of ``schema`` that no JSON Schema keyword of its dialect explains
    (``validator_class``: the ``jsonschema`` validator picked for it)."""
    known = set(getattr(validator_class, "VALIDATORS", {})) | _CORE_AND_ANNOTATIONS
    return sorted(
        str(key)
        for key in schema
        if not (isinstance(key, str) and (key in known or key.startswith("x-")))
    )


def reference_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema``'s references cannot be followed here (``None``: they can). Only
    references inside the schema itself are followed (``#``, ``#/json/pointer``, ``#anchor``):
    another document would be fetched from its URL by the validator at every answer, and a
    pointer to nothing fails the turn only when an answer reaches it."""
    references: list[str] = []
    anchors: set[str] = set()
    pending: list[Any] = [schema]
    while pending:  # iterative: a deeply nested schema is no recursion
        node = pending.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in _REFERENCE_KEYS and isinstance(value, str):
                    references.append(value)
                elif key in ("$anchor", "$dynamicAnchor") and isinstance(value, str):
                    anchors.add(value)
                else:
                    pending.append(value)
        elif isinstance(node, list):
            pending.extend(node)
    for reference in references:
        if not reference.startswith("#"):
            return (
                f"$ref {reference[:60]!r} is another document (only #... references are followed)"
            )
        fragment = urllib.parse.unquote(reference[1:])
        if fragment and not fragment.startswith("/"):
            found = fragment in anchors
        else:
            found = _pointed(schema, fragment)
        if not found:
            return f"$ref {reference[:60]!r} points at nothing in the schema"
    return None


def _pointed(schema: Any, pointer: str) -> bool:
    """Whether the JSON pointer ``pointer`` ('' or '/a/0/b') names a part of ``schema``."""
    node = schema
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True
