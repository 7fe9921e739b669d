"""Session config checked against what the harness declares, before anything opens.

A harness declares its own keys as :attr:`HarnessDescriptor.config_schema` (a JSON Schema
object); the runtime adds the keys it reads itself (:data:`RUNTIME_CONFIG_PROPERTIES`). A config
with an unknown key or a value of the wrong type is ``invalid-request`` naming the key, raised by
:func:`check_config` at open and resume before the session is attached or recorded. A harness
that declares nothing (``config_schema=None``, e.g. a third-party adapter written before this)
keeps unchecked keys; only the runtime's own keys are typed for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_hookspecs import HarnessDescriptor, HarnessError
from harness_hookspecs.permissions import safe_line

#: The keys the runtime reads from every session's config, whatever the harness.
RUNTIME_CONFIG_PROPERTIES: Mapping[str, Any] = {
    # harness_core.command_policy.CommandPolicy.from_config checks the inside
    "command_policy": {"type": ["object", "null"]},
    # harness_core.host_tools / harness_mcp_bridge.tools.select_tools check the inside
    "mcp_loopback": {"type": ["object", "null"]},
}


def effective_schema(descriptor: HarnessDescriptor) -> dict[str, Any]:
    """The JSON Schema a session config of ``descriptor``'s harness must satisfy."""
    declared = descriptor.config_schema
    if declared is None:
        return {"type": "object", "properties": dict(RUNTIME_CONFIG_PROPERTIES)}
    schema: dict[str, Any] = {"additionalProperties": False, **declared, "type": "object"}
    schema["properties"] = {**RUNTIME_CONFIG_PROPERTIES, **(declared.get("properties") or {})}
    return schema


def check_config(descriptor: HarnessDescriptor, config: Mapping[str, Any]) -> None:
    """``invalid-request`` naming the first offending key unless ``config`` fits the schema."""
    schema = effective_schema(descriptor)
    known = schema["properties"]
    name = descriptor.harness
    if schema.get("additionalProperties") is False:
        unknown = sorted(str(key) for key in config if key not in known)
        if unknown:
            raise HarnessError(
                "invalid-request",
                safe_line(
                    f"unknown config key {unknown[0]!r} for {name} "
                    f"(known: {', '.join(sorted(known))})"
                ),
            )
    import jsonschema  # only when a config is given: most sessions have none

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.path)))
    if errors:
        error = errors[0]
        where = ".".join(str(part) for part in error.path) or "config"
        raise HarnessError(
            "invalid-request",
            safe_line(f"config key {where!r} for {name}: {_short(error)}"),
        )


def config_rows(descriptor: HarnessDescriptor) -> list[list[str]]:
    """``harness describe``'s rows for the config: ``config.KEY`` and its declared type, or one
    ``config`` row saying the harness declares none."""
    schema = effective_schema(descriptor)
    rows = [
        [f"config.{key}", _type_of(value)] for key, value in sorted(schema["properties"].items())
    ]
    if descriptor.config_schema is None:
        rows.append(["config", "other keys not declared (unchecked)"])
    return rows


def _type_of(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(map(str, schema["enum"]))
    kind = schema.get("type", "any")
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def _short(error: Any) -> str:
    """The validator's complaint without echoing a long (maybe secret) value."""
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"must be {expected}, not {type(error.instance).__name__}"
    if error.validator == "enum":
        return f"must be one of {', '.join(map(repr, error.validator_value))}"
    return str(error.message)[:160]


__all__ = ["RUNTIME_CONFIG_PROPERTIES", "check_config", "config_rows", "effective_schema"]
