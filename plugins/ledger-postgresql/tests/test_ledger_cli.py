"""``harness ledger migrate|check`` on a real server: an empty database, a dry run that
changes nothing, a migrated one, and a role that lacks a privilege."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

HARNESS = str(Path(sys.executable).with_name("harness"))


def harness(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("HARNESS_CORE_PLUGINS", "HARNESS_LEDGER")
    }
    return subprocess.run([HARNESS, *argv], capture_output=True, text=True, env=env, timeout=60)


def checks(url: str) -> tuple[int, dict[str, bool]]:
    done = harness("ledger", "check", "--ledger", url, "--json")
    return done.returncode, {
        line["check"]: line["ok"] for line in map(json.loads, done.stdout.splitlines())
    }


def test_migrate_an_empty_database_after_a_dry_run_and_check_it(postgresql_ledger_url: str) -> None:
    url = postgresql_ledger_url
    code, found = checks(url)
    assert code == 1 and list(found.values()) == [False]  # version 0: nothing there yet
    dry = harness("ledger", "migrate", "--ledger", url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("CREATE TABLE") == 4 and "version 0 -> 2" in dry.stderr
    assert checks(url)[0] == 1  # the dry run created nothing
    done = harness("ledger", "migrate", "--ledger", url)
    assert (done.returncode, done.stdout.strip()) == (0, "ledger schema version 0 -> 2"), (
        done.stderr
    )
    code, found = checks(url)
    assert code == 0 and all(found.values()) and len(found) == 9, found
    again = harness("ledger", "migrate", "--ledger", url, "--json")
    assert json.loads(again.stdout) == {"from": 2, "to": 2}


def test_check_names_a_missing_privilege(postgresql_ledger_url: str, postgresql_server) -> None:
    url = postgresql_ledger_url
    assert harness("ledger", "migrate", "--ledger", url).returncode == 0
    role = f"reader_{uuid.uuid4().hex[:8]}"
    schema = url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgresql_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    limited = url.replace("harness@", f"{role}@", 1)
    code, found = checks(limited)
    assert code == 1
    assert [what for what, ok in found.items() if not ok] == [
        "INSERT on ledger_sessions",
        "UPDATE on ledger_sessions",
        "INSERT on ledger_events",
    ]


def test_pruning_needs_the_operator_privileges_not_the_workers(
    postgresql_ledger_url: str, postgresql_server, tmp_path: Path
) -> None:
    """A role with what the store needs (``PRIVILEGES``) cannot prune: one ``ledger-failed``
    line, the session kept (its archive written first); granted ``PRUNE_PRIVILEGES``, it can."""
    from ledger_postgresql.schema import PRIVILEGES, PRUNE_PRIVILEGES

    url = postgresql_ledger_url
    made = harness("run", "echo", "old", "--close", "--json", "--ledger", url)
    session_id = json.loads(made.stdout.splitlines()[0])["session_id"]
    role = f"worker_{uuid.uuid4().hex[:8]}"
    schema = url.rsplit("%3D", 1)[1]

    def grant(privileges: dict[str, tuple[str, ...]]) -> None:
        with psycopg.connect(postgresql_server.url, autocommit=True) as admin:
            for table, granted in privileges.items():
                admin.execute(f"GRANT {', '.join(granted)} ON {schema}.{table} TO {role}")

    with psycopg.connect(postgresql_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    grant(PRIVILEGES)
    limited = url.replace("harness@", f"{role}@", 1)
    prune = ("ledger", "prune", "--older-than", "0m", "--archive", str(tmp_path), "--ledger")
    refused = harness(*prune, limited)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "harness: error: ledger-failed: the PostgreSQL role may not prune the ledger"
    ]
    assert os.listdir(tmp_path) == [f"{session_id}.json"]  # archived first
    assert harness("events", session_id, "--ledger", url).returncode == 0  # kept
    grant(PRUNE_PRIVILEGES)
    done = harness(*prune, limited, "--json")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["action"] for line in done.stdout.splitlines()] == ["pruned"]
