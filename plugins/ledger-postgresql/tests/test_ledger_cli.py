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
    assert dry.stdout.count("CREATE TABLE") == 3 and "version 0 -> 1" in dry.stderr
    assert checks(url)[0] == 1  # the dry run created nothing
    done = harness("ledger", "migrate", "--ledger", url)
    assert (done.returncode, done.stdout.strip()) == (0, "ledger schema version 0 -> 1"), (
        done.stderr
    )
    code, found = checks(url)
    assert code == 0 and all(found.values()) and len(found) == 9, found
    again = harness("ledger", "migrate", "--ledger", url, "--json")
    assert json.loads(again.stdout) == {"from": 1, "to": 1}


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


def test_a_sqlite_ledger_is_refused_in_one_line() -> None:
    done = harness("ledger", "check", "--ledger", "sqlite:/tmp/x.sqlite")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid-request" in lines[0] and "postgresql://" in lines[0]
