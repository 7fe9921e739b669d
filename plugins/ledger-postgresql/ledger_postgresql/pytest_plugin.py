"""Pytest fixtures (a ``pytest11`` entry point): a real PostgreSQL server per test session.

``postgresql_server`` starts one throwaway server for the whole session (skipped with the reason
when no server can start: never passed); ``postgresql_ledger_url`` gives each test a ledger URL
of its own (a fresh schema on that server).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from .testing import PostgresUnavailable, TemporaryPostgres, schema_url, start


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[TemporaryPostgres]:
    try:
        server = start(durable=False)  # fsync off: tests don't survive power loss anyway
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL server unavailable: {error}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgresql_ledger_url(postgresql_server: TemporaryPostgres) -> str:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgresql_server.url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return schema_url(postgresql_server.url, schema)
