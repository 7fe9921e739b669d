"""``harness ledger migrate|check``: the PostgreSQL ledger's schema, on purpose.

A store migrates on its first open anyway (under an advisory lock); these commands let an
operator do it at a chosen time with a role that may (``migrate``; ``--dry-run`` prints the
statements), and check what a deployment's role can do (``check``: the version, the append-only
triggers, the table privileges; exit 1 when something is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from harness_hookspecs import HarnessError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("migrate", "check"), help="what to do")
    p.add_argument(
        "--ledger",
        default=os.environ.get("HARNESS_LEDGER"),
        help="the PostgreSQL ledger URL (default: $HARNESS_LEDGER)",
    )
    p.add_argument("--dry-run", action="store_true", help="migrate: print the statements only")


def run(args: argparse.Namespace) -> int:
    import psycopg

    from .schema import SCHEMA_VERSION, check, migrate, pending

    url = args.ledger or ""
    if url.partition(":")[0] not in ("postgresql", "postgres"):
        raise HarnessError(
            "invalid-request",
            "harness ledger needs a postgresql:// --ledger (SQLite migrates on open)",
        )
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
            if args.action == "check":
                found = check(connection)
                for what, holds in found:
                    if args.json:
                        print(json.dumps({"check": what, "ok": holds}))
                    else:
                        print(f"{'ok     ' if holds else 'MISSING'}  {what}")
                return 0 if all(holds for _, holds in found) else 1
            if args.dry_run:
                version, statements = pending(connection)
                for statement in statements:
                    print(json.dumps({"statement": statement}) if args.json else statement + ";")
                print(f"version {version} -> {SCHEMA_VERSION}: {len(statements)} statements",
                      file=sys.stderr)  # fmt: skip
                return 0
            before = migrate(connection)
    except psycopg.Error:
        raise HarnessError("ledger-failed", "the PostgreSQL ledger could not be reached") from None
    outcome = {"from": before, "to": SCHEMA_VERSION}
    print(
        json.dumps(outcome) if args.json else f"ledger schema version {before} -> {SCHEMA_VERSION}"
    )
    return 0
