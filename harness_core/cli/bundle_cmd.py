"""``harness import BUNDLE`` and ``harness replay ID``: bring a session back, and watch it again.

``import`` loads an exported bundle into a ledger with its ids kept (refused, nothing written, if
the session id is already there or the bundle is unusable). ``replay`` prints a session's events
as they happened, each with its offset from the first; ``--pace`` also waits the recorded gaps
(each capped) so the session plays back in time.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from .exits import EXIT_OK
from .output import print_json
from .view import format_event

if TYPE_CHECKING:
    from harness_hookspecs import Event

# The ledger readers are imported by the commands, not here: building the parser (every
# ``harness`` invocation) must stay cheap.

PACE_CAP = 2.0


def add_commands(sub: Any, command: Any, ledger_help: str) -> None:
    """Register the two commands (``command`` is the CLI's ``_command`` helper)."""
    p = command(
        sub,
        "import",
        "load an exported session bundle into a ledger (ids kept)",
        cmd_import,
        "one line: the imported session id, harness and event count",
    )
    p.add_argument("bundle", help="a file written by harness export (- = stdin)")
    p.add_argument("--ledger", help=ledger_help)
    p = command(sub, "replay", "print a session's events as they happened", cmd_replay)
    p.add_argument("session", help="session id (see harness sessions)")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument(
        "--pace", action="store_true", help=f"wait the recorded gaps (each at most {PACE_CAP}s)"
    )


def cmd_import(args: argparse.Namespace) -> int:
    from ..bundle_import import import_bundle, load_bundle_file, parse_bundle, summary
    from ..ledger import open_ledger
    from ..plugins import get_plugins
    from .ledger_read import ledger_url

    if args.bundle == "-":
        bundle = parse_bundle(sys.stdin.buffer.read())
    else:
        bundle = load_bundle_file(args.bundle)
    store = open_ledger(ledger_url(args.ledger), schemes=get_plugins().ledger_schemes)
    try:
        import_bundle(store, bundle)
    finally:
        store.close()
    facts = summary(bundle)
    if args.json:
        print_json(facts)
    else:
        print(f"imported {facts['session_id']} ({facts['harness']}, {facts['events']} events)")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from harness_hookspecs import HarnessError

    from .ledger_read import open_for_reading

    store = open_for_reading(args.ledger)
    try:
        if store is None or store.get_session(args.session) is None:
            raise HarnessError("session-not-found")
        events: list[Event] = store.events(args.session)
    finally:
        if store is not None:
            store.close()
    start = _moment(events[0].timestamp) if events else 0.0
    previous = start
    for event in events:
        moment = _moment(event.timestamp)
        if args.pace and moment > previous:
            sys.stdout.flush()
            time.sleep(min(PACE_CAP, moment - previous))
        previous = max(previous, moment)
        offset = max(0.0, moment - start)
        if args.json:
            from ..serialize import event_to_dict

            print_json({"offset": round(offset, 6), **event_to_dict(event)})
        else:
            sys.stdout.write(f"+{offset:.3f}s".rjust(11) + f" {format_event(event)}\n")
    return EXIT_OK


def _moment(timestamp: str) -> float:
    from datetime import datetime  # here: this module is imported to build every parser

    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
