"""Is this JSON object a JSON Schema, or some other JSON (an export bundle, a config)?

``jsonschema``'s meta-schema accepts any object (unknown keywords are allowed), so a file
that is not a schema at all would "validate" every answer. A host's output schema is checked
here as well: every top-level key must be a keyword of the schema's own dialect (validation,
core or annotation) or an ``x-`` extension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
