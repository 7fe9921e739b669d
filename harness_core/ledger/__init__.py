"""Ledger stores: where every event is recorded, and the source of truth for reading back.

URLs: ``memory:``; ``jsonl:DIR`` or ``jsonl:///abs/dir``; ``sqlite:PATH`` or
``sqlite:///abs/path.sqlite`` (the default, ``sqlite:.harness/ledger.sqlite`` relative to the
current directory, or ``$HARNESS_LEDGER``). Plugins add schemes with ``register_ledger_stores``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from harness_hookspecs import HarnessError, LedgerStore

from .memory import MemoryStore

ENV_LEDGER = "HARNESS_LEDGER"
DEFAULT_LEDGER_URL = "sqlite:.harness/ledger.sqlite"


def _sqlite(url: str) -> LedgerStore:
    from .sqlite import SqliteStore

    return SqliteStore(path_of(url, "sqlite"))


def _jsonl(url: str) -> LedgerStore:
    from .jsonl import JsonlStore

    return JsonlStore(path_of(url, "jsonl"))


BUILTIN_SCHEMES: dict[str, Callable[[str], LedgerStore]] = {
    "memory": lambda url: MemoryStore(),
    "jsonl": _jsonl,
    "sqlite": _sqlite,
}


def path_of(url: str, scheme: str) -> str:
    """``scheme:rel/path`` -> ``rel/path``; ``scheme:///abs/path`` -> ``/abs/path``."""
    rest = url[len(scheme) + 1 :]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):
            raise HarnessError(
                "invalid-request", f"{scheme} URLs are {scheme}:PATH or {scheme}:///ABS"
            )
    if not rest:
        raise HarnessError("invalid-request", f"the {scheme} ledger URL has no path")
    return rest


def open_ledger(
    url: str | None = None,
    *,
    schemes: Mapping[str, Callable[[str], LedgerStore]] | None = None,
) -> LedgerStore:
    """Open the ledger at ``url`` (default: ``$HARNESS_LEDGER`` or the SQLite default)."""
    url = url or os.environ.get(ENV_LEDGER) or DEFAULT_LEDGER_URL
    scheme, sep, _ = url.partition(":")
    known = {**BUILTIN_SCHEMES, **(schemes or {})}
    factory = known.get(scheme) if sep else None
    if factory is None:
        raise HarnessError("invalid-request", f"unknown ledger URL scheme {scheme[:30]!r}")
    return factory(url)


__all__ = ["BUILTIN_SCHEMES", "DEFAULT_LEDGER_URL", "ENV_LEDGER", "MemoryStore", "open_ledger"]
