"""A PostgreSQL server of these tests' own that they may restart, stop and cut off
(``restartable_server``); the shared ``postgresql_server`` stays undisturbed."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from ledger_postgresql.testing import PostgresUnavailable, TemporaryPostgres, schema_url, start


@pytest.fixture(scope="session")
def restartable_server() -> Iterator[TemporaryPostgres]:
    try:
        own = start(durable=False)
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL server unavailable: {error}")
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture
def restartable_url(restartable_server: TemporaryPostgres, request: pytest.FixtureRequest) -> str:
    """A fresh schema on the restartable server, named after the test."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    schema = f"o_{name}"
    with psycopg.connect(restartable_server.url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin.execute(f"CREATE SCHEMA {schema}")
    return schema_url(restartable_server.url, schema)
