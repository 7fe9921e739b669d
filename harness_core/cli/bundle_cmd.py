"""``harness import BUNDLE`` and ``harness replay ID``: bring a session back, and watch it again.

``import`` loads an exported bundle (ours, or a SuperQode Harness Protocol v1 one: see
:mod:`harness_core.superqode_bundle`) into a ledger with its ids kept (refused, nothing written, if
the session id is already there or the bundle is unusable). ``replay`` prints a session's events
as they happened, each with its offset from the first; ``--pace`` also waits the recorded gaps
(each capped) so the session plays back in time.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from ..transcript import format_event
from .commands.bundle import PACE_CAP
from .exits import EXIT_OK
from .output import print_json

if TYPE_CHECKING:
    from harness_hookspecs import Event


def cmd_import(args: argparse.Namespace) -> int:
    import os

    from ..bundle_import import import_bundle, load_any_bundle, spool, summary
    from ..context import default_state_root
    from ..ledger import open_ledger
    from ..plugins import get_plugins
    from ..redaction import Redactor, add_known_secrets
    from .ledger_read import ledger_url

    spooled = spool(sys.stdin.buffer) if args.bundle == "-" else None
    try:
        bundle = load_any_bundle(spooled or args.bundle)
        plugins = get_plugins()
        # the host's redaction, as a live session of this host would get it
        redactor = Redactor()
        add_known_secrets(redactor, plugins.credential_resolvers.values())
        store = open_ledger(ledger_url(args.ledger), schemes=plugins.ledger_schemes)
        try:
            import_bundle(
                store, bundle, redactor=redactor, journal=default_state_root() / "imports"
            )
        finally:
            store.close()
    finally:
        if spooled is not None:
            os.unlink(spooled)
    facts = summary(bundle)
    if args.json:
        print_json(facts)
    else:
        print(f"imported {facts['session_id']} ({facts['harness']}, {facts['events']} events)")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from harness_hookspecs import HarnessError

    from .ledger_read import open_for_reading, resolve_session

    resolve_session(args)
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
    from ..clock import epoch_seconds  # here: this module is imported to build every parser

    return epoch_seconds(timestamp) or 0.0
