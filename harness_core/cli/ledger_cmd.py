"""``harness ledger``: see :class:`harness_core.ledger.LedgerSchema` and :mod:`harness_core.prune`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import attrs

from .errors import EXIT_OK
from .output import print_json, print_json_lines

#: ``check`` found something missing.
EXIT_MISSING = 1


def cmd_ledger(args: argparse.Namespace) -> int:
    from ..ledger import ledger_schema
    from ..plugins import get_plugins
    from .ledger_read import ledger_url

    url = ledger_url(args.ledger)
    if args.action == "prune":
        return _prune(args, url)
    schema = ledger_schema(url, schemes=get_plugins().ledger_schemes)
    if args.action == "check":
        found = schema.check()
        for what, holds in found:
            if args.json:
                print_json({"check": what, "ok": holds})
            else:
                print(f"{'ok     ' if holds else 'MISSING'}  {what}")
        return EXIT_OK if all(holds for _, holds in found) else EXIT_MISSING
    if args.dry_run:
        version, statements = schema.pending()
        for statement in statements:
            if args.json:
                print_json({"statement": statement})
            else:
                print(statement + ";")
        plural = "" if len(statements) == 1 else "s"
        print(
            f"version {version} -> {schema.version}: {len(statements)} statement{plural}",
            file=sys.stderr,
        )
        return EXIT_OK
    before = schema.migrate()
    if args.json:
        print_json({"from": before, "to": schema.version})
    else:
        print(f"ledger schema version {before} -> {schema.version}")
    return EXIT_OK


def _prune(args: argparse.Namespace, url: str) -> int:
    from ..ledger import open_ledger
    from ..plugins import get_plugins
    from ..prune import LEFT_BUSY, LEFT_OPEN, cutoff, prune

    moment = cutoff(args.before, args.older_than)
    archive = Path(args.archive) if args.archive else None
    store = open_ledger(url, schemes=get_plugins().ledger_schemes)
    try:
        found = prune(store, before=moment, archive=archive, dry_run=args.dry_run)
    finally:
        store.close()
    if args.json:
        print_json_lines(attrs.asdict(f) for f in found)
    else:
        for f in found:
            print(f"{f.session_id}  {f.updated_at}  {f.action}  {f.events} events"
                  + (f"  {f.archive}" if f.archive else ""))  # fmt: skip
    left = sum(f.action in (LEFT_OPEN, LEFT_BUSY) for f in found)
    gone = len(found) - left
    verb = "would prune" if args.dry_run else "pruned"
    print(f"{verb} {gone} session{'' if gone == 1 else 's'} last active before {moment}; "
          f"left {left} (open or busy)", file=sys.stderr)  # fmt: skip
    return EXIT_OK
