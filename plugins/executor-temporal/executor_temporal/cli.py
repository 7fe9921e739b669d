"""``harness worker``: run a Temporal worker for harness sessions."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .worker import NAMESPACE, TASK_QUEUE


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="harness worker",
        description="Run sessions' turns from a Temporal task queue on the shared ledger.",
    )
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
        help="a directory every worker mounts: adapters' state_dir snapshots travel through it",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import anyio

    from .worker import run_worker

    args = parser().parse_args(argv)
    if not args.ledger:
        print("harness: invalid-request: the worker needs --ledger (a shared ledger URL)",
              file=sys.stderr)  # fmt: skip
        return 2

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
