"""The descriptor every bundled CLI adapter gives: local target, version 0.1.0."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness_hookspecs import HarnessDescriptor

from .locate import cli_details

#: Config keys read through this kit's helpers (settings.py, locate.py, endpoint.py): every
#: CLI adapter built on :class:`PerTurnCliAdapter` reads these, and declares its own besides.
CLI_CONFIG_PROPERTIES: Mapping[str, Any] = {
    "cli_path": {"type": "string"},
    "api_key": {"type": "string"},
    "api_key_env": {"type": "string"},
    "base_url": {"type": "string"},
    "env": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
    "preflight": {"type": "boolean"},
    "max_retries": {"type": "integer"},
    "model": {"type": "string"},
}
#: ``command``: an argv list, a JSON array of strings or a shell-quoted string (``command_of``).
COMMAND_PROPERTY: Mapping[str, Any] = {"type": ["string", "array"], "items": {"type": "string"}}


def config_schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    """A harness's ``config_schema``: exactly ``properties``, no other key."""
    return {"type": "object", "properties": dict(properties), "additionalProperties": False}


def local_descriptor(
    name: str,
    display_name: str,
    features: Iterable[str],
    details: Mapping[str, str],
    vendor: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> HarnessDescriptor:
    """``config``: the config keys the harness reads (JSON Schema ``properties``); ``None``
    declares nothing (keys unchecked)."""
    return HarnessDescriptor(
        provider=name,
        targets=["local"],
        features=list(features),
        version="0.1.0",
        vendor=vendor,
        display_name=display_name,
        details=details,
        config_schema=None if config is None else config_schema(config),
    )


def cli_descriptor(
    name: str,
    display_name: str,
    *,
    tested_cli: str,
    features: Iterable[str],
    details: Mapping[str, str],
    binary: str | None = None,
    vendor: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> HarnessDescriptor:
    """:func:`local_descriptor` with the tested release and, given ``binary``, the installed
    version and path (``describe()`` has no session: config ``cli_path`` is not known here)."""
    info = cli_details(binary, tested_cli) if binary else {"tested_cli": tested_cli}
    return local_descriptor(name, display_name, features, {**info, **details}, vendor, config)
