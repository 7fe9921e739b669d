"""A session's config as its record keeps it: what a resume or a close in another process
needs again (a ``stdio-jsonl`` command, a CLI path), with no secret in plaintext.

A string the session's redactor would redact (a credential the host knows, a key shape) is
stored as a reference instead: ``{"$secret": "env:NAME"}`` when the host's environment holds
it as ``$NAME`` (resolved again from there on resume), ``{"$secret": null}`` when nothing
could hold it (it is then left out on resume, as if never given). A config that is not JSON
(a host passing objects in-process) is kept to what JSON can carry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .redaction import Redactor

SECRET = "$secret"


def stored_config(config: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """``config`` for the session record: each secret string replaced by its reference."""
    environment = {value: name for name, value in sorted(os.environ.items()) if len(value) >= 6}

    def store(value: Any) -> Any:
        if isinstance(value, str):
            if redactor.text(value) == value:
                return value
            name = environment.get(value)
            return {SECRET: None if name is None else f"env:{name}"}
        if isinstance(value, Mapping):
            return {str(key): store(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [store(item) for item in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return None  # not JSON: a live object only the process that opened it had

    return {str(key): store(value) for key, value in config.items()}


_UNRESOLVED = object()


def resolved_config(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The config a resume passes: each reference resolved again (one that cannot be is
    left out: a key whose value was a secret nobody can give back)."""

    def resolve(value: Any) -> Any:
        if isinstance(value, Mapping):
            if set(value) == {SECRET}:
                reference = value[SECRET]
                if isinstance(reference, str) and reference.startswith("env:"):
                    return os.environ.get(reference[4:], _UNRESOLVED)
                return _UNRESOLVED
            items = {key: resolve(item) for key, item in value.items()}
            return {key: item for key, item in items.items() if item is not _UNRESOLVED}
        if isinstance(value, list):
            return [item for item in map(resolve, value) if item is not _UNRESOLVED]
        return value

    resolved = resolve(stored)
    assert isinstance(resolved, dict)
    return resolved
