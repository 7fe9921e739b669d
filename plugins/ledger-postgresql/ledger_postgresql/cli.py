"""The PostgreSQL ledger's schema on purpose: what ``harness ledger migrate|check`` runs.

A store migrates on its first open anyway (under an advisory lock); ``harness ledger migrate``
lets an operator do it at a chosen time with a role that may (``--dry-run`` prints the
statements), and ``check`` reports what a deployment's role can do (the version, the
append-only triggers, the table privileges).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from harness_hookspecs import HarnessError

from . import schema

T = TypeVar("T")


class PostgresSchema:
    """:class:`harness_core.ledger.LedgerSchema` of the PostgreSQL ledger at ``url``."""

    version = schema.SCHEMA_VERSION

    def __init__(self, url: str) -> None:
        self.url = url

    def _on_connection(self, work: Callable[[Any], T]) -> T:
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as connection:
                return work(connection)
        except psycopg.Error:
            raise HarnessError(
                "ledger-failed", "the PostgreSQL ledger could not be reached"
            ) from None

    def pending(self) -> tuple[int, list[str]]:
        return self._on_connection(schema.pending)

    def migrate(self) -> int:
        return self._on_connection(schema.migrate)

    def check(self) -> list[tuple[str, bool]]:
        return self._on_connection(schema.check)
