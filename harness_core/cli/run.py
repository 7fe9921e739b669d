"""``harness run``, ``harness cancel`` and ``harness close``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import frozen
from harness_hookspecs.values import Value

from ..diagnostics import session_log
from ..digests import sha256_hex
from .errors import (
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_TURN_FAILED,
    EXIT_UNAVAILABLE,
    CliError,
    exit_code_for,
)
from .output import Out, print_json
from .prompt import check_names, check_workspace, parse_pairs, read_prompt, sandbox_spec
from .status_line import TICK as STATUS_TICK
from .status_line import StatusLine, wanted
from .view import RunView

if TYPE_CHECKING:
    from harness_hookspecs import Event


def active_file(state_root: Path, session_id: str) -> Path:
    """Where a running ``harness run`` leaves its pid for ``harness cancel``/``close``."""
    return state_root / "active" / (sha256_hex(session_id.encode())[:32] + ".json")


def _active_record(turn_id: str) -> dict[str, Any]:
    from ..ledger.owner import process_start

    return {"pid": os.getpid(), "start": process_start(os.getpid()), "turn_id": turn_id}


def _active_pid(state_root: Path, session_id: str) -> tuple[int, str] | None:
    """The pid of the ``harness run`` running a turn in the session, if it still lives.

    A run killed with -9 leaves its file, and its pid may now be another process's: only the
    process that wrote the file (same pid and ``/proc`` start time) counts. A run writes its
    file whole (a rename), so one that cannot be read is stale too; a stale file is removed.
    """
    from ..ledger.owner import same_process

    path = active_file(state_root, session_id)
    try:
        info = json.loads(path.read_bytes())
        pid = int(info["pid"])
        alive = same_process(pid, info.get("start"))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, IndexError):
        alive = False
    if not alive:
        path.unlink(missing_ok=True)
        return None
    return pid, str(info.get("turn_id", "?"))


def _write_active(path: Path, record: dict[str, Any]) -> None:
    """Write the active file whole: a run killed mid-write leaves no half file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(record))
    os.replace(partial, path)


class _Printer:
    """Chooses the view: JSON Lines (``--json``), one line per event (``--events``), readable."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.mode = "json" if args.json else ("events" if args.events else "readable")
        # With --output-schema stdout carries only the parsed answer (JSON); the streamed text
        # goes to stderr with the rest.
        structured = getattr(args, "output_schema", None) is not None
        self.view = RunView(Out(sys.stderr if structured else sys.stdout), Out(sys.stderr))
        #: The live line while a turn is silent (readable, stderr a terminal, no y/n prompts).
        self.status: StatusLine | None = None
        if self.mode == "readable" and not getattr(args, "approve", False) and wanted(sys.stderr):
            self.status = StatusLine(sys.stderr, colour=self.view.chrome.rich)
        # The answer on the same terminal: the line may only be drawn at a line's start.
        self._shared = structured or wanted(sys.stdout)

    def tick(self) -> None:
        if self.status is not None:
            self.status.tick(may_draw=self.view.at_line_start or not self._shared)

    async def ticking(self) -> None:
        """Redraw the status line until cancelled (nothing to do without one)."""
        import anyio

        if self.status is None:
            return
        while True:
            await anyio.sleep(STATUS_TICK)
            self.tick()

    def session(self, event: Event) -> None:
        if self.mode == "json":
            self.event(event)
        elif self.mode == "events":
            sys.stderr.write(f"session {event.session_id}\n")
            sys.stderr.flush()
            self.event(event)
        else:
            self.view.session(event)

    def event(self, event: Event) -> None:
        if self.status is not None:
            self.status.erase()
            self.status.note(event)
        if self.mode == "json":
            from ..serialize import event_to_dict

            print_json(event_to_dict(event))
        elif self.mode == "events":
            from ..transcript import format_event

            sys.stdout.write(format_event(event) + "\n")
            sys.stdout.flush()
        else:
            self.view.show(event)

    def output(self, value: Any) -> None:
        """The turn's parsed answer (``--output-schema``): pretty JSON on stdout when readable
        (``--json``/``--events`` show it on the ``turn.completed`` event)."""
        if self.mode == "readable":
            sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
            sys.stdout.flush()

    def summary(self, result: Any, seconds: float) -> None:
        if self.status is not None:
            self.status.erase()
            self.status = None
        if self.mode == "readable":
            self.view.summary(result.status, result.usage, seconds)


def known_session(args: argparse.Namespace, *, harness: str | None = None) -> Any:
    """The session's ledger record, checked before a controller opens (and so creates) the
    ledger: missing, another harness's, closed, or busy in another ``harness run``."""
    from harness_hookspecs import HarnessError

    from ..context import default_state_root

    record = stored_session(args.ledger, args.session)
    if harness is not None and record.ref.harness != harness:
        raise CliError("invalid-request", f"the session belongs to harness {record.ref.harness!r}")
    if _active_pid(default_state_root(), args.session) is not None:
        raise HarnessError(
            "turn-active", f"a harness run is running a turn in it (harness cancel {args.session})"
        )
    return record


def stored_session(ledger: str | None, session_id: str) -> Any:
    """The session's record, read (without creating the ledger) or ``session-not-found``."""
    from harness_hookspecs import HarnessError

    from .ledger_read import open_for_reading

    store = open_for_reading(ledger)
    try:
        record = store.get_session(session_id) if store is not None else None
    finally:
        if store is not None:
            store.close()
    if record is None:
        raise HarnessError("session-not-found")
    return record


def session_words(args: argparse.Namespace) -> None:
    """``NAME`` and ``PROMPT`` as the user meant them. With ``--session ID`` (a unique prefix
    will do) or ``-c/--continue`` (the newest open session) the harness is the session's own:
    a lone word is the prompt, unless it names that harness (then stdin gives the prompt)."""

    from .ledger_read import latest_open_session, resolve_session

    if getattr(args, "continue_session", False):
        if args.session:
            raise CliError("invalid-request", "give --session ID or --continue, not both")
        args.session = latest_open_session(args.ledger)
    if not args.session:
        if args.name is None:
            raise CliError(
                "invalid-request",
                "give a harness NAME (harness list), or --session ID / -c to resume",
            )
        return
    resolve_session(args)
    record = stored_session(args.ledger, args.session)
    harness = record.ref.harness
    if args.name is not None and args.prompt is None and args.name != harness:
        args.name, args.prompt = harness, args.name  # the lone word is the prompt
    elif args.name is None:
        args.name = harness


@frozen(repr=False, eq=False)
class RunInvocation(Value):
    """What ``harness run`` hands a plugin's run option (``add_run_options``'s ``run``): the
    prompt, the ``--config`` pairs, the checked workspace, the printer of events and the
    structured-output options (empty without ``--output-schema``)."""

    prompt: str
    config: dict[str, Any]
    workspace: str | None
    printer: Any
    structured: dict[str, Any]


def cmd_run(args: argparse.Namespace) -> int:
    import anyio
    from harness_hookspecs import HarnessError

    from ..controller import Controller
    from ..plugin_cache import plugins_for

    session_words(args)
    prompt = read_prompt(args)
    structured = structured_options(args)
    opening = session_options(args)
    from .ledger_read import ledger_url

    # Not every other adapter's, sandbox's and ledger store's imports: only what this run names.
    listed = getattr(args, "plugin_listing", None)  # as the parser's plugin options saw it
    plugins = plugins_for(args.name, args.sandbox, ledger_url(args.ledger), listed=listed)
    check_names(args, plugins)
    if args.session and known_session(args, harness=args.name).status == "closed":
        raise HarnessError("session-closed")
    config = parse_pairs(args.config, "--config")
    spec = sandbox_spec(args)
    workspace = check_workspace(args.workspace) if args.workspace or not args.session else None
    printer = _Printer(args)
    # A plugin's run option may take the turn elsewhere (executor-temporal: --temporal).
    invocation = RunInvocation(prompt, config, workspace, printer, structured)
    for hand_off in getattr(args, "hand_offs", ()):
        handed = hand_off(args, invocation)
        if handed is not None:
            return int(handed)
    approver = None
    if args.approve:
        from .approve import TerminalApprover, open_terminal

        approver = TerminalApprover(open_terminal())

    async def main() -> int:
        async with (
            Controller(
                plugins=plugins,
                ledger=args.ledger,
                turn_timeout=args.timeout,
                max_events_per_turn=args.max_events,
                permission_handler=approver,
                budget=budget_of(args),
                dangerous_grant=bool(getattr(args, "grant_dangerous", False)),
                checkpoints=bool(getattr(args, "checkpoints", False)),
            ) as controller,
            anyio.create_task_group() as tg,
        ):
            running: dict[str, Any] = {}
            signalled = anyio.Event()
            # Installed before the session opens, so an early Ctrl-C still becomes a cancel.
            with anyio.open_signal_receiver(
                signal.SIGINT, signal.SIGTERM, signal.SIGUSR1
            ) as signals:
                tg.start_soon(_watch, signals, controller, running, signalled)
                try:
                    # What the session holds already; then print what open/resume appended (a
                    # dead run's turn ended as interrupted, then session.resumed).
                    shown = controller.ledger.last_sequence(args.session) if args.session else 0
                    ref = await _open(controller, args, workspace, config, spec, opening)
                    running["ref"] = ref
                    result = await _run_turn(
                        controller,
                        ref,
                        prompt,
                        args,
                        running,
                        signalled,
                        printer,
                        shown,
                        structured,
                    )
                finally:
                    tg.cancel_scope.cancel()
        return _exit_code(result)

    code: int = anyio.run(main)
    return code


async def _watch(signals: Any, controller: Any, running: dict[str, Any], signalled: Any) -> None:
    """``harness run``'s signals: SIGINT/SIGTERM cancel the turn; SIGUSR1 says ``harness
    steer`` left text in the session's inbox (:mod:`.steer_inbox`)."""
    async for number in signals:
        if number == signal.SIGUSR1:
            if "ref" in running:
                from .steer_inbox import deliver

                await deliver(controller, running["ref"].session_id, controller.state_root)
            continue
        signalled.set()
        if "turn" in running:
            await controller.cancel_turn(running["ref"], running["turn"].turn_id)


def _exit_code(result: Any) -> int:
    """The exit status of ``harness run`` for the turn's result."""
    if result.status == "completed":
        return EXIT_OK
    # 130 only when the host interrupted the turn; a harness ending it itself is a failure.
    by = getattr(result.events[-1].payload, "by", None) if result.events else None
    if by == "host":
        return EXIT_CANCELLED
    # A turn that could not run for want of credentials or the CLI: 69, as a refused open.
    unavailable = exit_code_for(result.reason or "") == EXIT_UNAVAILABLE
    return EXIT_UNAVAILABLE if unavailable else EXIT_TURN_FAILED


async def _open(
    controller: Any,
    args: argparse.Namespace,
    workspace: str | None,
    config: dict[str, Any],
    spec: Any,
    opening: dict[str, Any],
) -> Any:
    if not args.session:
        return await controller.open_session(
            harness=args.name,
            config=config,
            workspace=workspace,
            model=args.model,
            posture=args.posture or ("strict" if args.approve else "auto"),
            sandbox=spec,
            agent=args.agent,
            user=args.user,
            **opening,
        )
    extra: dict[str, Any] = {"config": config, "sandbox": spec}
    if workspace:
        extra["workspace"] = workspace
    for key in ("model", "agent", "user"):
        if getattr(args, key) is not None:
            extra[key] = getattr(args, key)
    if args.posture is not None or args.approve:
        extra["posture"] = args.posture or "strict"
    return await controller.resume_session(args.session, **extra)


def session_options(args: argparse.Namespace) -> dict[str, Any]:
    """``instructions``/``record_thinking`` of a new session from ``--instructions FILE`` and
    ``--no-record-thinking`` (checked before the session opens: a bad file records nothing)."""
    options: dict[str, Any] = {}
    if getattr(args, "instructions", None) is not None:
        if args.session:
            raise CliError("invalid-request", "--instructions applies to a new session")
        from .text_file import read_instructions

        options["instructions"] = read_instructions(args.instructions)
    if getattr(args, "record_thinking", True) is False:
        if args.session:
            raise CliError("invalid-request", "--no-record-thinking applies to a new session")
        options["record_thinking"] = False
    return options


def structured_options(args: argparse.Namespace) -> dict[str, Any]:
    """``output_schema``/``output_retries`` for the turn from ``--output-schema FILE`` and
    ``--output-retries N`` (checked before the session opens: a bad one records nothing)."""
    if args.output_schema is None:
        if args.output_retries is not None:
            raise CliError("invalid-request", "--output-retries needs --output-schema")
        return {}
    from ..structured_output import MAX_OUTPUT_RETRIES  # a structured turn's module: only for one
    from .schema_file import read_output_schema

    options: dict[str, Any] = {"output_schema": read_output_schema(args.output_schema)}
    if args.output_retries is not None:
        if args.output_retries > MAX_OUTPUT_RETRIES:
            raise CliError("invalid-request", f"--output-retries must be 0-{MAX_OUTPUT_RETRIES}")
        options["output_retries"] = args.output_retries
    return options


def budget_of(args: argparse.Namespace) -> dict[str, Any]:
    """The session budget from ``--max-turns/--max-cost/--max-tokens/--max-wall-clock``."""
    limits = {
        "max_turns": args.max_turns,
        "max_cost_usd": args.max_cost,
        "max_tokens": args.max_tokens,
        "max_wall_clock": args.max_wall_clock,
    }
    return {name: value for name, value in limits.items() if value is not None}


async def _run_turn(
    controller: Any,
    ref: Any,
    prompt: str,
    args: argparse.Namespace,
    running: dict[str, Any],
    signalled: Any,
    printer: _Printer,
    shown: int,
    structured: dict[str, Any],
) -> Any:
    import anyio

    controller.ledger.flush()
    for event in controller.events(ref.session_id, after=shown):
        if event.type in ("session.opened", "session.resumed"):
            printer.session(event)  # the session id comes first
        else:
            printer.event(event)  # e.g. a dead run's turn the resume ended as interrupted
    active = active_file(controller.state_root, ref.session_id)
    log = session_log(controller.log_directory, ref.session_id)
    logged = _size(log)
    started = time.monotonic()
    async with controller.turn(ref, prompt, **structured) as turn:
        running["turn"] = turn
        if signalled.is_set():
            await controller.cancel_turn(ref, turn.turn_id)
        _write_active(active, _active_record(turn.turn_id))
        try:
            async with anyio.create_task_group() as ticking:
                ticking.start_soon(printer.ticking)
                async for event in turn:
                    if event.type != "turn.started" or printer.mode != "readable":
                        printer.event(event)
                ticking.cancel_scope.cancel()
        finally:
            if printer.status is not None:
                printer.status.erase()
            active.unlink(missing_ok=True)
            running.pop("turn", None)
    result = turn.result()
    seconds = time.monotonic() - started
    if args.close:
        await controller.close_session(ref)
        for event in controller.events(ref.session_id, after=turn.events[-1].sequence):
            printer.event(event)
    if structured and result.status == "completed":
        printer.output(result.output)
    printer.summary(result, seconds)
    if result.status == "failed" and _size(log) > logged:
        # What the harness raised is not in the record (fixed reasons only): say where it is.
        sys.stderr.write(f"diagnostic log: {log} (harness logs {ref.session_id})\n")
        sys.stderr.flush()
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from ..context import default_state_root
    from .ledger_read import resolve_session

    resolve_session(args)
    found = _active_pid(default_state_root(), args.session)
    if found is None:
        raise CliError("turn-not-found", "no harness run is running a turn in that session")
    pid, turn_id = found
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        raise CliError("turn-not-found", "the turn ended before it could be cancelled") from None
    if args.json:
        print_json({"session_id": args.session, "turn_id": turn_id, "cancel": "requested"})
    else:
        print(f"cancel requested for turn {turn_id}", file=sys.stderr)
    return EXIT_OK


def cmd_steer(args: argparse.Namespace) -> int:
    """Steer the turn a ``harness run`` runs in the session (see :mod:`.steer_inbox`)."""
    from harness_hookspecs import REASONS

    from ..context import default_state_root
    from .ledger_read import resolve_session
    from .steer_inbox import post, wait_answer

    resolve_session(args)
    state_root = default_state_root()
    found = _active_pid(state_root, args.session)
    if found is None:
        raise CliError("turn-not-found", "no harness run is running a turn in that session")
    pid, turn_id = found
    answer = post(state_root, args.session, args.text)
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        raise CliError("turn-not-found", "the turn ended before it could be steered") from None
    outcome = wait_answer(answer)
    if outcome is None:
        raise CliError("turn-not-found", "the run did not take the steer (the turn ended?)")
    if not outcome.get("ok"):
        reason = str(outcome.get("reason"))
        raise CliError(reason if reason in REASONS else "invalid-request", outcome.get("hint"))
    if args.json:
        print_json({"session_id": args.session, "turn_id": turn_id, "steered": True})
    else:
        print(f"steered turn {turn_id}", file=sys.stderr)
    return EXIT_OK


def cmd_close(args: argparse.Namespace) -> int:
    """Close a session left open by ``harness run`` (idempotent). It is closed in the ledger
    alone - ``session.closed`` and nothing else (no ``session.resumed``): the ``harness run``
    that held it already released its harness, processes and sandbox when it ended, and a turn
    a killed run left open ends ``interrupted`` (see :mod:`harness_core.record_close`)."""
    import anyio

    from ..controller import Controller
    from .ledger_read import resolve_session

    resolve_session(args)

    async def close() -> None:
        async with Controller(ledger=args.ledger) as controller:
            await controller.close_session(args.session)

    if known_session(args).status == "closed":
        outcome = "was already closed"
    else:
        anyio.run(close)
        outcome = "closed"
    if args.json:
        print_json({"session_id": args.session, "status": "closed", "outcome": outcome})
    else:
        print(f"session {args.session} {outcome}")
    return EXIT_OK
