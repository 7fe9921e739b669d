"""``harness fake-model``: the fake model server as a ``harness`` command (entry point
``fake-model``, hook ``register_commands``)."""

from __future__ import annotations

from argparse import ArgumentParser, Namespace

from harness_hookspecs import hookimpl
from harness_hookspecs.specs.commands import Commands


@hookimpl
def register_commands(commands: Commands) -> None:
    commands.add(
        "fake-model", "run the scripted fake model server (offline tests)", _run, _arguments
    )


def _arguments(parser: ArgumentParser) -> None:
    parser.add_argument("rest", nargs="...", help="e.g. serve --port 8080 --script FILE")


def _run(args: Namespace) -> int:
    from .cli import main

    return int(main(args.rest) or 0)
