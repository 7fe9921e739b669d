"""The ``harness`` command line.

Imports stay lazy so ``harness --help`` and ``harness list`` start fast. Bad input prints one line
on stderr (``harness: error: <reason>: <message>``) and exits non-zero; nothing recorded is lost.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_hookspecs import Event

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130


class CliError(Exception):
    """A one-line error for the user."""


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    sys.stderr.write(f"harness: error: {message}\n")
    return code


# -- formatting ---------------------------------------------------------------------------------


def format_event(event: Event) -> str:
    """One readable line per event."""
    from harness_hookspecs import events as ev

    p = event.payload
    detail = ""
    if isinstance(p, ev.SessionOpened):
        detail = f"{p.provider} ({p.target}) posture={p.posture} sandbox={p.sandbox}"
    elif isinstance(p, ev.SessionResumed):
        detail = f"{p.provider} ({p.target})"
    elif isinstance(p, ev.TurnStarted):
        detail = _clip(p.prompt)
    elif isinstance(p, ev.MessageDelta):
        detail = _clip(p.text)
    elif isinstance(p, ev.MessageCompleted):
        detail = f"[{p.role}] {_clip(p.text)}"
    elif isinstance(p, ev.ToolStarted | ev.ToolCompleted):
        status = "" if isinstance(p, ev.ToolStarted) else (" ok" if p.ok else " error")
        detail = f"{p.name}{status}" + (f" - {p.summary}" if p.summary else "")
    elif isinstance(p, ev.PermissionRequested):
        detail = f"{p.request_id} {p.summary}"
    elif isinstance(p, ev.PermissionResolved):
        detail = f"{p.request_id} {p.decision} by {p.source}"
    elif isinstance(p, ev.UsageReported):
        u = p.usage
        parts = [
            f"{name}={getattr(u, name)}"
            for name in ("input_tokens", "output_tokens", "requests", "cost_usd")
            if getattr(u, name) is not None
        ]
        detail = " ".join(parts)
    elif isinstance(p, ev.Status):
        detail = p.message
    elif isinstance(p, ev.Artifact):
        detail = p.name
    elif isinstance(p, ev.TurnCompleted):
        detail = _clip(p.text or "")
    elif isinstance(p, ev.TurnFailed):
        detail = f"{p.reason}: {p.message}" + (f" ({p.hint})" if p.hint else "")
    elif isinstance(p, ev.TurnCancelled):
        detail = f"by {p.by}"
    return f"{event.sequence:>5}  {event.type:<21} {detail}".rstrip()


def _clip(text: str, limit: int = 160) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _event_json(event: Event) -> dict[str, Any]:
    from .serialize import event_to_dict

    data: dict[str, Any] = event_to_dict(event)
    return data


# -- commands -----------------------------------------------------------------------------------


def cmd_plugins(args: argparse.Namespace) -> int:
    from .plugins import get_plugins

    plugins = get_plugins()
    rows: list[dict[str, Any]] = [
        {
            "name": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "harnesses": info.harnesses,
            "sandbox_providers": info.sandbox_providers,
            "credential_resolvers": info.credential_resolvers,
            "ledger_schemes": info.ledger_schemes,
            "hooks": info.hooks,
        }
        for name, info in sorted(plugins.info.items())
        if name != "harness_core.defaults"
    ]
    broken = [{"name": b.name, "error": b.error} for b in plugins.broken]
    if args.json:
        _print_json({"plugins": rows, "broken": broken})
        return EXIT_OK
    if not rows and not broken:
        print("no plugins installed")
    for row in rows:
        provides = []
        for key, label in (
            ("harnesses", "harness"),
            ("sandbox_providers", "sandbox"),
            ("credential_resolvers", "credentials"),
            ("ledger_schemes", "ledger"),
        ):
            provides += [f"{label}:{name}" for name in row[key]]
        others = [h for h in row["hooks"] if not h.startswith("register_")]
        provides += [f"hook:{h}" for h in others]
        version = f" {row['version']}" if row["version"] else ""
        dist = f" ({row['distribution']}{version})" if row["distribution"] else ""
        print(f"{row['name']}{dist}: {', '.join(provides) or '-'}")
    for item in broken:
        print(f"BROKEN {item['name']}: {item['error']}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from .plugins import get_plugins

    plugins = get_plugins()
    names = plugins.harness_names()
    if args.json:
        _print_json(names)
    else:
        for name in names:
            print(name)
    return EXIT_OK


def cmd_describe(args: argparse.Namespace) -> int:
    from .plugins import get_plugins
    from .serialize import descriptor_to_dict

    plugins = get_plugins()
    descriptor = plugins.pm.hook.harness_describe(harness=args.name)
    data = descriptor_to_dict(descriptor)
    if args.json:
        _print_json(data)
        return EXIT_OK
    print(f"provider:  {descriptor.provider}")
    if descriptor.display_name:
        print(f"name:      {descriptor.display_name}")
    print(f"version:   {descriptor.version or '-'}")
    print(f"vendor:    {descriptor.vendor or '-'}")
    print(f"targets:   {', '.join(sorted(descriptor.targets))}")
    print(f"features:  {', '.join(sorted(descriptor.features)) or '-'}")
    print(f"protocol:  {descriptor.protocol_version}")
    for key, value in sorted(descriptor.details.items()):
        print(f"{key + ':':<10} {value}")
    return EXIT_OK


def _active_file(state_root: Any, session_id: str) -> Any:
    import hashlib

    return state_root / "active" / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json")


def cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from .controller import Controller

    def emit(event: Event) -> None:
        if args.json:
            _print_json(_event_json(event))
        else:
            print(format_event(event), flush=True)

    if not args.prompt.strip():
        raise CliError("invalid-request: the prompt is empty")

    async def main() -> int:
        async with (
            Controller(
                ledger=args.ledger,
                turn_timeout=args.timeout,
                max_events_per_turn=args.max_events,
            ) as controller,
            anyio.create_task_group() as tg,
        ):
            running: dict[str, Any] = {}
            signalled = anyio.Event()
            # Installed before the session opens, so an early Ctrl-C still becomes a cancel.
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:

                async def watch() -> None:
                    async for _ in signals:
                        signalled.set()
                        if "turn" in running:
                            await controller.cancel_turn(running["ref"], running["turn"].turn_id)

                tg.start_soon(watch)
                result = await _run_turn(controller, args, running, signalled, emit)
                tg.cancel_scope.cancel()
        if result.status == "completed":
            return EXIT_OK
        return EXIT_CANCELLED if result.status == "cancelled" else EXIT_TURN_FAILED

    return anyio.run(main)


def _parse_config(items: Sequence[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"invalid-request: --config needs KEY=VALUE, got {item[:40]!r}")
        try:
            config[key] = json.loads(value)
        except ValueError:
            config[key] = value
    return config


async def _run_turn(
    controller: Any,
    args: argparse.Namespace,
    running: dict[str, Any],
    signalled: Any,
    emit: Callable[[Event], None],
) -> Any:
    from . import proctree

    if args.session:
        extra: dict[str, Any] = {"config": _parse_config(args.config)}
        if args.workspace:
            extra["workspace"] = os.path.abspath(args.workspace)
        ref = await controller.resume_session(args.session, **extra)
        if ref.provider != args.name:
            raise CliError(f"invalid-request: session belongs to harness {ref.provider}")
    else:
        ref = await controller.open_session(
            harness=args.name,
            config=_parse_config(args.config),
            workspace=os.path.abspath(args.workspace or os.getcwd()),
            model=args.model,
            posture=args.posture,
        )
    running["ref"] = ref
    controller.ledger.flush()
    last = controller.ledger.last_sequence(ref.session_id)
    for event in controller.events(ref.session_id, after=last - 1):
        emit(event)  # session.opened / session.resumed
    active = _active_file(controller.state_root, ref.session_id)
    async with controller.turn(ref, args.prompt) as turn:
        running["turn"] = turn
        if signalled.is_set():
            await controller.cancel_turn(ref, turn.turn_id)
        active.parent.mkdir(parents=True, exist_ok=True)
        active.write_text(json.dumps({"owner": proctree.owner(), "turn_id": turn.turn_id}))
        try:
            async for event in turn:
                emit(event)
        finally:
            active.unlink(missing_ok=True)
            running.pop("turn", None)
    if args.close:
        await controller.close_session(ref)
        for event in controller.events(ref.session_id, after=turn.events[-1].sequence):
            emit(event)
    if not args.json:
        print(f"session {ref.session_id}", file=sys.stderr)
    return turn.result()


def _open_store(args: argparse.Namespace) -> Any:
    from .ledger import open_ledger
    from .plugins import get_plugins

    return open_ledger(args.ledger, schemes=get_plugins().ledger_schemes)


def cmd_sessions(args: argparse.Namespace) -> int:
    from .serialize import record_to_dict

    store = _open_store(args)
    try:
        records = store.list_sessions(limit=args.limit)
    finally:
        store.close()
    if args.json:
        _print_json([record_to_dict(r) for r in records])
        return EXIT_OK
    for r in records:
        print(f"{r.ref.session_id}  {r.ref.provider:<14} {r.status:<7} {r.created_at}")
    return EXIT_OK


def cmd_events(args: argparse.Namespace) -> int:
    from harness_hookspecs import HarnessError

    store = _open_store(args)
    try:
        if store.get_session(args.session) is None:
            raise HarnessError("session-not-found")
        events = store.events(args.session, after=args.after, limit=args.limit)
    finally:
        store.close()
    for event in events:
        if args.json:
            _print_json(_event_json(event))
        else:
            print(format_event(event))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from .export import export_session

    store = _open_store(args)
    try:
        bundle = export_session(store, args.session)
    finally:
        store.close()
    text = json.dumps(bundle, ensure_ascii=False, indent=2) + "\n"
    if args.output and args.output != "-":
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {args.output} ({len(bundle.get('events', []))} events)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    from . import proctree
    from .controller import default_state_root

    active = _active_file(default_state_root(), args.session)
    try:
        info = json.loads(active.read_text())
        # "<pid>-<start time>": a file left by a killed run names a pid that may belong to
        # another process by now; only the process that wrote it is signalled.
        pid, _, start = str(info["owner"]).partition("-")
        process = proctree.read_stat(int(pid))
        if process is None or str(process.start) != start or process.zombie:
            active.unlink(missing_ok=True)
            raise ProcessLookupError
        os.kill(int(pid), signal.SIGINT)
    except (FileNotFoundError, ProcessLookupError, ValueError, KeyError):
        raise CliError("turn-not-found: no such active turn") from None
    print(f"cancel requested for turn {info.get('turn_id', '?')}", file=sys.stderr)
    return EXIT_OK


def cmd_conformance(args: argparse.Namespace) -> int:
    from .conformance import cli_main

    return int(cli_main(args))


def cmd_new(args: argparse.Namespace) -> int:
    from .scaffold import cli_main

    return int(cli_main(args))


def cmd_fake_model(args: argparse.Namespace) -> int:
    from .testing.fake_model import main as fake_main

    return int(fake_main(args.rest) or 0)


# -- parser -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Drive coding-agent harnesses through one Session -> Turns control plane.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    ledger_help = "ledger URL (default: $HARNESS_LEDGER or sqlite:.harness/ledger.sqlite)"

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str) -> Any:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        return p

    p = add("plugins", cmd_plugins, "list installed plugins, what each registers, broken ones")
    p.add_argument("--json", action="store_true")
    p = add("list", cmd_list, "list harness names")
    p.add_argument("--json", action="store_true")
    p = add("describe", cmd_describe, "describe a harness")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p = add("run", cmd_run, "run one turn (opening or resuming a session) and stream its events")
    p.add_argument("name", help="harness name")
    p.add_argument("prompt")
    p.add_argument("--session", help="resume this session id instead of opening a new one")
    p.add_argument("--workspace", help="workspace directory (default: current directory)")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--model")
    p.add_argument("--posture", default="auto", choices=("strict", "auto", "dangerous"))
    p.add_argument("--timeout", type=float, help="turn deadline in seconds")
    p.add_argument("--max-events", type=int, help="event-count limit for the turn")
    p.add_argument("--close", action="store_true", help="close the session after the turn")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="harness configuration (VALUE parsed as JSON when it is JSON); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print events as JSON lines")
    p = add("sessions", cmd_sessions, "list sessions in the ledger")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--limit", type=int)
    p.add_argument("--json", action="store_true")
    p = add("events", cmd_events, "print a session's events from the ledger")
    p.add_argument("session")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--after", type=int, default=0, help="only events with sequence > N")
    p.add_argument("--limit", type=int)
    p.add_argument("--json", action="store_true")
    p = add("export", cmd_export, "export a session as a portable JSON bundle")
    p.add_argument("session")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("-o", "--output", help="write to this file (default: stdout)")
    p = add("cancel", cmd_cancel, "cancel the active turn of a session run by `harness run`")
    p.add_argument("session")
    p = add("conformance", cmd_conformance, "run the conformance kit against a harness")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.add_argument("--workspace", help="workspace directory (default: a temporary one)")
    p.add_argument("--timeout", type=float, default=60.0, help="per-turn deadline in seconds")
    p = add("new", cmd_new, "scaffold a new plugin from the cookiecutter template")
    p.add_argument("--kind", choices=("harness", "harness-cli", "sandbox", "credentials"))
    p.add_argument("--name")
    p.add_argument("--description")
    p.add_argument("--author")
    p.add_argument("--output-dir", default=".")
    p.add_argument("--no-input", action="store_true")
    p = add("fake-model", cmd_fake_model, "run the scripted fake model server (for offline tests)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="e.g. serve --port 8080 --script FILE")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    from harness_hookspecs import HarnessError

    try:
        return int(args.func(args))
    except HarnessError as error:
        return _fail(str(error))
    except CliError as error:
        return _fail(str(error))
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:
        if os.environ.get("HARNESS_DEBUG"):
            raise
        return _fail(
            f"internal error ({type(error).__name__}); set HARNESS_DEBUG=1 for details", 70
        )


if __name__ == "__main__":
    sys.exit(main())
