"""Registers the ``postgresql:`` (and ``postgres:``) ledger URL schemes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl


def _open(url: str) -> Any:
    from .store import PostgresStore  # psycopg loads only when a PostgreSQL ledger is used

    return PostgresStore(url)


@hookimpl
def register_ledger_stores(register: Callable[[str, Callable[[str], Any]], None]) -> None:
    register("postgresql", _open)
    register("postgres", _open)
