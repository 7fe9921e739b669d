"""The ledger's tables in PostgreSQL, created and migrated under an advisory lock.

``ledger_events`` holds one row per event (primary key session + sequence, unique event id, the
writer epoch that wrote it); triggers refuse ``UPDATE``, ``DELETE`` and ``TRUNCATE``.
``ledger_sessions`` holds one row per session: its last sequence, its writer epoch, and the
session record once one was created (a session may get events before its record). The schema
version lives in ``ledger_schema_version``. Tables are created in the first schema of the
connection's ``search_path`` (``?options=-csearch_path%3Dname`` in the URL picks another one).
"""

from __future__ import annotations

from typing import Any

from harness_hookspecs import HarnessError

SCHEMA_VERSION = 1
#: ``pg_advisory_xact_lock`` key: one process creates or migrates, the others wait.
MIGRATION_LOCK = 0x68_61_72_6E_65_73_73  # "harness"
#: LISTEN/NOTIFY channel; the payload is the session id whose events were committed.
CHANNEL = "harness_ledger"

_VERSION_1 = (
    """CREATE TABLE ledger_sessions (
        session_id     text PRIMARY KEY,
        last_sequence  bigint NOT NULL DEFAULT 0,
        writer_epoch   bigint NOT NULL DEFAULT 0,
        provider       text,
        status         text,
        created_at     text,
        updated_at     text,
        record         text
    )""",
    """CREATE INDEX ledger_sessions_created ON ledger_sessions (created_at DESC, session_id)
        WHERE record IS NOT NULL""",
    """CREATE TABLE ledger_events (
        session_id        text NOT NULL,
        sequence          bigint NOT NULL CHECK (sequence > 0),
        event_id          text NOT NULL UNIQUE,
        turn_id           text,
        type              text NOT NULL,
        timestamp         text NOT NULL,
        harness           text NOT NULL,
        parent_event_id   text,
        protocol_version  integer NOT NULL,
        payload           text NOT NULL,
        writer_epoch      bigint NOT NULL,
        PRIMARY KEY (session_id, sequence)
    )""",
    """CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the ledger is append-only'; END $$""",
    """CREATE TRIGGER ledger_events_append_only BEFORE UPDATE OR DELETE ON ledger_events
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()""",
    """CREATE TRIGGER ledger_events_no_truncate BEFORE TRUNCATE ON ledger_events
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()""",
    "CREATE TABLE ledger_schema_version (version integer NOT NULL)",
)

#: Statements that bring a ledger at version ``n - 1`` to version ``n``.
MIGRATIONS: dict[int, tuple[str, ...]] = {1: _VERSION_1}


def migrate(connection: Any) -> None:
    """Create or upgrade the schema on ``connection`` (a psycopg connection, autocommit)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = _version(connection)
        if version > SCHEMA_VERSION:
            raise HarnessError(
                "ledger-failed",
                f"the ledger schema version {version} is newer than this store supports "
                f"({SCHEMA_VERSION})",
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[step]:
                connection.execute(statement)
        if version == 0:
            connection.execute("INSERT INTO ledger_schema_version VALUES (%s)", (SCHEMA_VERSION,))
        elif version < SCHEMA_VERSION:
            connection.execute("UPDATE ledger_schema_version SET version = %s", (SCHEMA_VERSION,))


def _version(connection: Any) -> int:
    found = connection.execute("SELECT to_regclass('ledger_schema_version')").fetchone()
    if found[0] is None:
        foreign = connection.execute(
            "SELECT to_regclass('ledger_events'), to_regclass('ledger_sessions')"
        ).fetchone()
        if any(foreign):
            raise HarnessError("ledger-failed", "the database has ledger tables of another kind")
        return 0
    row = connection.execute("SELECT max(version) FROM ledger_schema_version").fetchone()
    return int(row[0] or 0)
