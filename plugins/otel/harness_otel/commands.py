"""The ``harness`` command line's OpenTelemetry (entry point ``otel-commands``, hook
``register_commands``):

- ``harness run ... --otel``, or any ``harness run`` with ``OTEL_TRACES_EXPORTER`` (or an OTLP
  endpoint) in the environment: the SDK is configured from the ``OTEL_*`` environment
  (:mod:`.environment`) before the turn, the registered observer exports the run's session as it
  happens, and what is open at exit is ended and flushed;
- ``harness trace ID``: a session already in the ledger sent as a trace, span times taken from
  the recorded events (the same spans a live run exports).
"""

from __future__ import annotations

import atexit
from argparse import ArgumentParser, Namespace
from typing import Any

from harness_hookspecs import hookimpl
from harness_hookspecs.specs.commands import Commands


@hookimpl
def register_commands(commands: Commands) -> None:
    commands.add_run_options(_run_options, _run_hand_off)
    commands.add(
        "trace",
        "send a recorded session to OpenTelemetry as a trace (OTEL_* environment)",
        _trace,
        _trace_arguments,
        json_help="a JSON summary of what was sent",
    )


def _run_options(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        help="export this run as OpenTelemetry spans, configured by the OTEL_* environment "
        "(OTEL_TRACES_EXPORTER; default otlp)",
    )


def _run_hand_off(args: Namespace, invocation: Any) -> int | None:
    """Install the SDK before the turn when asked; the turn itself stays local (``None``)."""
    from . import environment

    names = environment.wanted(explicit=bool(getattr(args, "otel", False)))
    if not names:
        return None
    from opentelemetry import trace

    from . import observer

    provider = environment.tracer_provider(names)
    trace.set_tracer_provider(provider)

    def flush() -> None:
        observer.end_all()  # the session of a run without --close stays open: end its span
        provider.shutdown()

    atexit.register(flush)
    return None


def _trace_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("session", help="session id (or a unique prefix)")
    parser.add_argument(
        "--ledger", help="ledger URL (default: $HARNESS_LEDGER or the SQLite default)"
    )


def recorded(url: str | None, wanted_id: str) -> tuple[str, list[Any]]:
    """The full id and the events of the session ``wanted_id`` names (an id, or a unique
    prefix of one), read through the ledger store's protocol."""
    from harness_hookspecs import HarnessError

    from harness_core.ledger import open_ledger

    store = open_ledger(url)
    try:
        record = store.get_session(wanted_id)
        if record is None:
            matches = [
                r.session_id for r in store.list_sessions() if r.session_id.startswith(wanted_id)
            ]
            if len(matches) != 1:
                raise HarnessError(
                    "session-not-found" if not matches else "invalid-request",
                    f"no session {wanted_id} in the ledger"
                    if not matches
                    else f"the session id prefix {wanted_id!r} is ambiguous",
                )
            return matches[0], list(store.events(matches[0]))
        return str(record.session_id), list(store.events(record.session_id))
    finally:
        store.close()


def _trace(args: Namespace) -> int:
    import json
    import sys

    from harness_hookspecs import HarnessError

    from . import OtelObserver, environment

    names = environment.wanted(explicit=True)
    if not names:
        raise HarnessError(
            "invalid-request", "OTEL_TRACES_EXPORTER is none or OTEL_SDK_DISABLED is true"
        )
    session_id, events = recorded(args.ledger, args.session)
    provider = environment.tracer_provider(names)
    replay = OtelObserver(tracer_provider=provider)
    for event in events:
        replay.on_event(event)
    replay.end_all(at=events[-1].timestamp if events else None)
    provider.shutdown()
    summary = {
        "session_id": session_id,
        "events": len(events),
        "turns": sum(1 for event in events if event.type == "turn.started"),
        "tool_calls": sum(1 for event in events if event.type == "tool.started"),
        "exporters": names,
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"sent session {session_id} as a trace: {summary['turns']} turns, "
            f"{summary['tool_calls']} tool calls, {len(events)} events ({', '.join(names)})",
            file=sys.stderr,
        )
    return 0
