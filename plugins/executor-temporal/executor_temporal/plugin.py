"""The executor's ``harness`` commands: ``harness worker`` and ``harness run --temporal``.

Registered through the ``register_commands`` hook (entry point ``executor-temporal``); importing
this module stays cheap (Temporal loads only when a worker or a ``--temporal`` run starts).
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from typing import Any

from harness_hookspecs import hookimpl
from harness_hookspecs.specs.commands import Commands


@hookimpl
def register_commands(commands: Commands) -> None:
    commands.add(
        "worker",
        "run a Temporal worker for sessions (executor-temporal)",
        _worker,
        _worker_arguments,
    )
    commands.add(
        "reconcile-temporal",
        "close sessions whose Temporal workflow is gone, end turns whose writer is gone",
        _reconcile,
        _reconcile_arguments,
        json_help="print JSON Lines (one object per line)",
    )
    commands.add_run_options(_run_arguments, _run_on_temporal)


def _worker_arguments(parser: ArgumentParser) -> None:
    from .cli import add_arguments

    add_arguments(parser)


def _worker(args: Namespace) -> int:
    from .cli import run

    return run(args)


def _reconcile_arguments(parser: ArgumentParser) -> None:
    from .cli import add_reconcile_arguments

    add_reconcile_arguments(parser)


def _reconcile(args: Namespace) -> int:
    from .cli import reconcile

    return reconcile(args)


def _run_arguments(parser: ArgumentParser) -> None:
    from .connection import add_arguments

    parser.add_argument(
        "--temporal", metavar="ADDRESS", help="run on Temporal workers (harness worker)"
    )
    add_arguments(parser, prefix="--temporal-")


def _run_on_temporal(args: Namespace, invocation: Any) -> int | None:
    """``harness run --temporal ADDRESS``: the turn runs on a worker (``None`` without it)."""
    if not args.temporal:
        return None
    from harness_core.cli.errors import CliError

    from .cli import run_on_temporal

    if invocation.structured:
        raise CliError("unsupported-feature", "--output-schema does not run on --temporal yet")
    return run_on_temporal(
        args, invocation.prompt, invocation.config, invocation.workspace, invocation.printer
    )
