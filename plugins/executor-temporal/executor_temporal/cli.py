"""``harness worker``: run a Temporal worker for harness sessions (arguments added to the core
CLI's parser; importing this module stays cheap: Temporal loads only when the worker runs)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from harness_hookspecs import HarnessError

from harness_core.cli.commands.args import count

from .connection import TemporalConnection
from .options import add_arguments as add_connection_arguments
from .shapes import DEFAULT_GRACE, DEFAULT_MAX_CONCURRENT, NAMESPACE, TASK_QUEUE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1:7233", help="Temporal frontend host:port")
    p.add_argument(
        "--namespace", default=NAMESPACE, help=f"Temporal namespace (default {NAMESPACE})"
    )
    p.add_argument(
        "--task-queue", default=TASK_QUEUE, help=f"task queue to poll (default {TASK_QUEUE})"
    )
    p.add_argument(
        "--ledger",
        default=os.environ.get("HARNESS_LEDGER"),
        help="the shared ledger URL (postgresql://...; default: $HARNESS_LEDGER)",
    )
    p.add_argument("--state-dir", help="this worker's adapter state root")
    p.add_argument(
        "--shared-state",
        metavar="DIR",
        help="a directory every worker mounts: adapters' state_dir snapshots travel through it",
    )
    p.add_argument(
        "--max-concurrent",
        type=count(1),
        default=DEFAULT_MAX_CONCURRENT,
        metavar="N",
        help=f"turns this worker runs at once (default {DEFAULT_MAX_CONCURRENT})",
    )
    p.add_argument(
        "--grace",
        type=_seconds,
        default=DEFAULT_GRACE,
        metavar="SECONDS",
        help="on SIGTERM, how long running turns may finish here before they are handed over "
        f"to other workers (default {DEFAULT_GRACE:g})",
    )
    p.add_argument(
        "--checkpoints",
        action="store_true",
        help="snapshot each session's workspace before and after every turn (harness diff, "
        "rewind); the checkpoint stores live in --state-dir",
    )
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="worker log lines on stderr: text, or one JSON object per line",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve /healthz, /readyz and /metrics (Prometheus) here (e.g. 127.0.0.1:9464)",
    )
    add_connection_arguments(p)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < 86_400:
        raise argparse.ArgumentTypeError("must be between 0 and 86400 seconds")
    return value


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return host.strip("[]"), int(port)


def run(args: argparse.Namespace) -> int:
    import anyio

    from .observability import configure_logging
    from .worker import run_worker

    if not args.ledger:
        raise HarnessError("invalid-request", "the worker needs --ledger (a shared ledger URL)")
    connection = TemporalConnection.from_args(args, args.address)
    configure_logging(args.log_format)

    def ready() -> None:
        print(f"worker ready on {args.task_queue} at {args.address}", flush=True)

    anyio.run(
        lambda: run_worker(
            args.address,
            ledger=args.ledger,
            namespace=args.namespace,
            task_queue=args.task_queue,
            state_dir=args.state_dir,
            shared_state=args.shared_state,
            on_ready=ready,
            max_concurrent=args.max_concurrent,
            grace=args.grace,
            checkpoints=args.checkpoints,
            http=args.http,
            connection=connection,
        )
    )
    return 0


def add_reconcile_arguments(p: argparse.ArgumentParser) -> None:
    from harness_core.cli.commands.reconcile import add_reconcile_arguments as shared

    p.add_argument("--temporal", metavar="ADDRESS", default="127.0.0.1:7233",
                   help="Temporal frontend host:port")  # fmt: skip
    p.add_argument(
        "--namespace", default=NAMESPACE, help=f"Temporal namespace (default {NAMESPACE})"
    )
    add_connection_arguments(p)
    shared(p)


def reconcile(args: argparse.Namespace) -> int:
    """``harness reconcile-temporal``: :func:`harness_core.reconcile.reconcile` with the
    workflows' state: an open session whose workflow is not running (never started, completed,
    terminated, or lost with a dev server's memory) is closed in the ledger."""
    import anyio
    import anyio.from_thread
    import anyio.to_thread

    from harness_core.cli.reconcile_cmd import run_reconcile

    from .client import workflow_gone

    connection = TemporalConnection.from_args(args, args.temporal)

    async def main() -> int:
        client = await connection.client()

        def gone(session_id: str) -> bool:
            return bool(anyio.from_thread.run(workflow_gone, client, session_id))

        code: int = await anyio.to_thread.run_sync(run_reconcile, args, gone)
        return code

    result: int = anyio.run(main)
    return result


def run_on_temporal(
    args: argparse.Namespace,
    prompt: str,
    config: dict[str, Any],
    workspace: str | None,
    printer: Any,
) -> int:
    """``harness run --temporal ADDRESS``: the turn runs on a worker; events come from the
    ledger (``--ledger`` must be the workers' shared ledger). Ctrl-C cancels the turn."""
    import signal
    import time

    import anyio
    from harness_hookspecs import Usage

    from harness_core.cli.errors import EXIT_CANCELLED, EXIT_OK, EXIT_TURN_FAILED

    from .client import TemporalController

    connection = TemporalConnection.from_args(args, args.temporal, prefix="--temporal-")

    async def main() -> int:
        controller = await TemporalController.connect(
            args.temporal, ledger=args.ledger, connection=connection
        )
        async with controller, anyio.create_task_group() as group:
            if args.session:
                ref: Any = args.session
            else:
                ref = await controller.open_session(
                    harness=args.name,
                    workspace=workspace,
                    model=args.model,
                    posture=args.posture or "auto",
                    agent=args.agent,
                    user=args.user,
                    config=config,
                )
                printer.session(controller.events(ref.session_id)[-1])
            started = time.monotonic()
            async with controller.turn(ref, prompt) as turn:

                async def cancel_on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for _ in signals:
                            await controller.cancel_turn(ref, turn.turn_id)

                group.start_soon(cancel_on_signal)
                async for event in turn:
                    if event.type != "turn.started" or printer.mode != "readable":
                        printer.event(event)
                summary = await turn.result()
            if args.close:
                await controller.close_session(ref)
            group.cancel_scope.cancel()
        usage = Usage(**summary.usage) if summary.usage else None
        if printer.mode == "readable":
            printer.view.summary(summary.status, usage, time.monotonic() - started)
        if summary.status == "completed":
            return EXIT_OK
        return EXIT_CANCELLED if summary.status == "cancelled" else EXIT_TURN_FAILED

    code: int = anyio.run(main)
    return code
