"""``harness worker``: run a Temporal worker for harness sessions (arguments added to the core
CLI's parser; importing this module stays cheap: Temporal loads only when the worker runs)."""

from __future__ import annotations

import argparse
import os

from harness_hookspecs import HarnessError

from .shapes import NAMESPACE, TASK_QUEUE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1:7233", help="Temporal frontend host:port")
    p.add_argument("--namespace", default=NAMESPACE)
    p.add_argument("--task-queue", default=TASK_QUEUE)
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


def run(args: argparse.Namespace) -> int:
    import anyio

    from .worker import run_worker

    if not args.ledger:
        raise HarnessError("invalid-request", "the worker needs --ledger (a shared ledger URL)")

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
        )
    )
    return 0
