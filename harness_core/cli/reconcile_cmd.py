"""``harness reconcile``: see :mod:`harness_core.reconcile`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import attrs

from .errors import EXIT_OK
from .output import print_json_lines


def cmd_reconcile(args: argparse.Namespace) -> int:
    return run_reconcile(args)


def run_reconcile(
    args: argparse.Namespace, workflow_gone: Callable[[str], bool] | None = None
) -> int:
    """Reconcile ``args.ledger`` (``--dry-run``, ``--json``) and print the findings: the
    command's body, shared with the Temporal executor's ``reconcile-temporal``."""
    from ..ledger import open_ledger
    from ..plugins import get_plugins
    from ..reconcile import reconcile
    from .ledger_read import ledger_url

    store = open_ledger(ledger_url(args.ledger), schemes=get_plugins().ledger_schemes)
    try:
        findings = reconcile(store, workflow_gone=workflow_gone, dry_run=args.dry_run)
    finally:
        store.close()
    if args.json:
        print_json_lines({**attrs.asdict(f), "dry_run": bool(args.dry_run)} for f in findings)
    else:
        for f in findings:
            action = "close session" if f.closed else "end turn"
            print(f"{f.session_id}  {f.turn_id or '-'}  {action}  ({f.reason})")
    verb = "would end" if args.dry_run else "ended"
    plural = "" if len(findings) == 1 else "s"
    print(f"{len(findings)} orphan{plural} {verb}", file=sys.stderr)
    return EXIT_OK
