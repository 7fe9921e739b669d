"""``harness new`` (scaffold a plugin) and ``harness serve`` (HTTP API and viewer)."""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from typing import Any

from . import lazy


def register_commands(commands: Any) -> None:
    commands.add(
        "new",
        "scaffold a new plugin from the cookiecutter template",
        lazy("info", "cmd_new"),
        _new_arguments,
    )
    commands.add(
        "serve",
        "serve the HTTP API and the live session viewer (127.0.0.1)",
        _serve,
        _serve_arguments,
    )


def _new_arguments(p: ArgumentParser) -> None:
    p.add_argument("--kind", choices=("harness", "harness-cli", "sandbox", "credentials"))
    p.add_argument("--name")
    p.add_argument("--description")
    p.add_argument("--author")
    p.add_argument("--output-dir", default=".")
    p.add_argument("--no-input", action="store_true")


def _serve_arguments(p: ArgumentParser) -> None:
    from ...serve.command import add_arguments

    add_arguments(p)


def _serve(args: Namespace) -> int:
    from ...serve.command import main

    return main(args)
