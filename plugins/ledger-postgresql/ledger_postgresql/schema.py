"""The ledger's tables in PostgreSQL, created and migrated under an advisory lock.

``ledger_events`` holds one row per event (primary key session + sequence, unique event id, the
writer epoch that wrote it); triggers refuse ``UPDATE``, ``DELETE`` and ``TRUNCATE``.
``ledger_sessions`` holds one row per session: its last sequence, its writer epoch, and the
session record once one was created (a session may get events before its record).
``ledger_pruned`` (version 2) lists the sessions ``harness ledger prune`` archived and removed:
the delete trigger lets their rows go and no others. The schema version lives in
``ledger_schema_version``. Tables are created in the first schema of the
connection's ``search_path`` (``?options=-csearch_path%3Dname`` in the URL picks another one).
"""

from __future__ import annotations

from typing import Any

from harness_hookspecs import HarnessError

SCHEMA_VERSION = 2
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

# Version 1 refused every delete; version 2 lets a pruned session's rows go (its tombstone is
# written in the same transaction, by a role that may: see PRUNE_PRIVILEGES).
_VERSION_2 = (
    """CREATE TABLE ledger_pruned (
        session_id     text PRIMARY KEY,
        pruned_at      text NOT NULL,
        last_sequence  bigint NOT NULL
    )""",
    """CREATE FUNCTION ledger_refuse_unpruned() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND EXISTS
                (SELECT 1 FROM ledger_pruned WHERE session_id = OLD.session_id) THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION 'the ledger is append-only';
        END $$""",
    "DROP TRIGGER ledger_events_append_only ON ledger_events",
    """CREATE TRIGGER ledger_events_append_only BEFORE UPDATE OR DELETE ON ledger_events
        FOR EACH ROW EXECUTE FUNCTION ledger_refuse_unpruned()""",
)

#: Statements that bring a ledger at version ``n - 1`` to version ``n``.
MIGRATIONS: dict[int, tuple[str, ...]] = {1: _VERSION_1, 2: _VERSION_2}


#: What the store's role needs once the tables exist (``harness ledger check`` checks it):
#: table -> privileges. Creating or migrating them needs ``CREATE`` on the schema.
PRIVILEGES = {
    "ledger_sessions": ("SELECT", "INSERT", "UPDATE"),
    "ledger_events": ("SELECT", "INSERT"),
    "ledger_schema_version": ("SELECT",),
}
#: What ``harness ledger prune``'s role needs besides (an operator's, not the workers').
PRUNE_PRIVILEGES = {
    "ledger_pruned": ("SELECT", "INSERT"),
    "ledger_events": ("DELETE",),
    "ledger_sessions": ("DELETE",),
}


def pending(connection: Any) -> tuple[int, list[str]]:
    """The schema version found and the statements :func:`migrate` would run (a dry run)."""
    version = schema_version(connection)
    _refuse_newer(version)
    return version, [
        " ".join(statement.split())
        for step in range(version + 1, SCHEMA_VERSION + 1)
        for statement in MIGRATIONS[step]
    ]


def migrate(connection: Any) -> int:
    """Create or upgrade the schema on ``connection`` (a psycopg connection, autocommit);
    the version found before."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = schema_version(connection)
        _refuse_newer(version)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[step]:
                connection.execute(statement)
        if version == 0:
            connection.execute("INSERT INTO ledger_schema_version VALUES (%s)", (SCHEMA_VERSION,))
        elif version < SCHEMA_VERSION:
            connection.execute("UPDATE ledger_schema_version SET version = %s", (SCHEMA_VERSION,))
    return version


def _refuse_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise HarnessError(
            "ledger-failed",
            f"the ledger schema version {version} is newer than this store supports "
            f"({SCHEMA_VERSION})",
        )


def check(connection: Any) -> list[tuple[str, bool]]:
    """What ``harness ledger check`` reports: (what, whether it holds), for the schema version,
    the append-only triggers and the connecting role's privileges."""
    version = schema_version(connection)
    found = [
        (f"schema version {version} (this store: {SCHEMA_VERSION})", version == SCHEMA_VERSION)
    ]
    if version == 0:
        return found
    triggers = {
        row[0]
        for row in connection.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass('ledger_events')"
        ).fetchall()
    }
    for trigger in ("ledger_events_append_only", "ledger_events_no_truncate"):
        found.append((f"trigger {trigger} (append-only)", trigger in triggers))
    for table, privileges in PRIVILEGES.items():
        for privilege in privileges:
            row = connection.execute(
                "SELECT has_table_privilege(to_regclass(%s), %s)", (table, privilege)
            ).fetchone()
            found.append((f"{privilege} on {table}", bool(row[0])))
    return found


def schema_version(connection: Any) -> int:
    """The ledger schema's version in the connection's schema (0: none yet)."""
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
