"""``harness run --output-schema FILE``: the JSON Schema a turn's final answer must match.

Read and checked before anything opens, so a bad file records nothing: one line
``harness: error: invalid-request: <what is wrong>: <detail>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_hookspecs import safe_line

from ..schema_check import foreign_keywords, reference_problem
from .errors import CliError

#: A schema file larger than this is refused (a turn's schema travels in its request).
MAX_SCHEMA_BYTES = 1024 * 1024


def _refuse(what: str, detail: str) -> CliError:
    return CliError("invalid-request", f"{what}: {safe_line(detail, 300)}")


def read_output_schema(path: str) -> dict[str, Any]:
    """The schema in ``path``: a JSON object that is a valid JSON Schema."""
    import jsonschema

    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise _refuse("cannot read the output schema file", f"{path}: {error.strerror}") from None
    if len(data) > MAX_SCHEMA_BYTES:
        raise _refuse("the output schema file is too large", f"{len(data):,} bytes (max 1 MiB)")
    try:
        schema = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise _refuse("the output schema file is not JSON", "not UTF-8 text") from None
    except json.JSONDecodeError as error:
        where = f"{error.msg} at line {error.lineno} column {error.colno}"
        raise _refuse("the output schema file is not JSON", where) from None
    except RecursionError:
        raise _refuse("the output schema file is not JSON", "nested too deeply") from None
    if not isinstance(schema, dict):
        raise _refuse("the output schema is not a JSON Schema", "it must be a JSON object")
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        at = "/".join(str(part) for part in error.path) or "the top level"
        detail = f"{error.message} at {at}"
        raise _refuse("the output schema is not a valid JSON Schema", detail) from None
    except RecursionError:
        raise _refuse("the output schema is not a valid JSON Schema", "nested too deeply") from None
    foreign = foreign_keywords(schema, cls)
    if foreign:
        keys = ", ".join(repr(key[:40]) for key in foreign[:3])
        raise _refuse("the output schema is not a JSON Schema", f"unknown keywords {keys}")
    problem = reference_problem(schema)
    if problem is not None:
        raise _refuse("the output schema's references cannot be followed", problem)
    return schema
