"""``harnessplane-ledger-postgresql``: the harness_core ledger on PostgreSQL.

``HARNESS_LEDGER=postgresql://user@host:5432/db`` (or ``--ledger``) makes every worker write one
shared, durable, append-only ledger. See :mod:`ledger_postgresql.store`.
"""

from __future__ import annotations

from .schema import CHANNEL, SCHEMA_VERSION

TYPE_CHECKING = False  # the store (and psycopg) load on first use of the name, below
if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ["CHANNEL", "SCHEMA_VERSION", "PostgresStore"]


def __getattr__(name: str) -> object:
    if name == "PostgresStore":
        from .store import PostgresStore

        return PostgresStore
    raise AttributeError(name)
