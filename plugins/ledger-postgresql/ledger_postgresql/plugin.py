"""Registers the ``postgresql:`` (and ``postgres:``) ledger URL schemes and ``harness ledger``."""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl
from harness_hookspecs.specs.commands import Commands


def _open(url: str) -> Any:
    from .store import PostgresStore  # psycopg loads only when a PostgreSQL ledger is used

    return PostgresStore(url)


@hookimpl
def register_ledger_stores(register: Callable[[str, Callable[[str], Any]], None]) -> None:
    register("postgresql", _open)
    register("postgres", _open)


@hookimpl
def register_commands(commands: Commands) -> None:
    commands.add(
        "ledger",
        "migrate or check a PostgreSQL ledger's schema (ledger-postgresql)",
        _ledger,
        _ledger_arguments,
        json_help="print JSON Lines (one object per line)",
    )


def _ledger_arguments(parser: ArgumentParser) -> None:
    from .cli import add_arguments

    add_arguments(parser)


def _ledger(args: Namespace) -> int:
    from .cli import run

    return run(args)
