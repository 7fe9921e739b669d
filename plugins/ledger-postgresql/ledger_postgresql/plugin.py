"""Registers the ``postgresql:`` (and ``postgres:``) ledger URL schemes (``harness ledger
migrate|check|prune`` then work on them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl


class PostgresScheme:
    """The registered factory: ``scheme(url)`` opens the store, ``scheme.schema(url)`` its
    schema (``harness_core.ledger.ManagedScheme``). psycopg loads only when one is used."""

    def __call__(self, url: str) -> Any:
        from .store import PostgresStore

        return PostgresStore(url)

    def schema(self, url: str) -> Any:
        from .cli import PostgresSchema

        return PostgresSchema(url)


@hookimpl
def register_ledger_stores(register: Callable[[str, Callable[[str], Any]], None]) -> None:
    scheme = PostgresScheme()
    register("postgresql", scheme)
    register("postgres", scheme)
