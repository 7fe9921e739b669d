"""Where ``harness run`` gets its prompt and session options, checked before anything opens.

Everything here refuses bad input with a :class:`CliError` *before* a session is opened, so a
refused ``harness run`` records nothing (no half-opened session in the ledger).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from harness_hookspecs._bounds import TEXT_MAX, has_control

from .errors import CliError, file_error

#: Read at most this much (bytes) from stdin or a file: the prompt bound plus UTF-8 headroom.
_READ_LIMIT = TEXT_MAX * 4 + 1


def read_prompt(args: argparse.Namespace) -> str:
    """PROMPT, ``-`` (stdin), ``--prompt-file FILE`` (``-`` = stdin), or piped stdin."""
    if args.prompt is not None and args.prompt_file is not None:
        raise CliError("invalid-request", "give PROMPT or --prompt-file, not both")
    if args.prompt_file is not None:
        text = _read_source(args.prompt_file)
    elif args.prompt == "-":
        text = _read_source("-")
    elif args.prompt is not None:
        text = args.prompt
    elif not _stdin_is_terminal():
        text = _read_source("-")
    else:
        raise CliError(
            "invalid-request", "no prompt: give PROMPT, - to read stdin, or --prompt-file FILE"
        )
    if not text.strip():
        raise CliError("invalid-request", "the prompt is empty")
    if len(text) > TEXT_MAX:
        raise CliError("invalid-request", f"the prompt is longer than {TEXT_MAX:,} characters")
    if has_control(text, allow_whitespace=True):
        raise CliError("invalid-request", "the prompt contains control characters")
    return text


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is None or sys.stdin.isatty()
    except (AttributeError, ValueError):
        return True


def _read_source(source: str) -> str:
    try:
        if source == "-":
            if sys.stdin is None:
                raise CliError("invalid-request", "stdin is closed")
            data = sys.stdin.buffer.read(_READ_LIMIT)
        else:
            with open(source, "rb") as handle:
                data = handle.read(_READ_LIMIT)
    except OSError as error:
        raise file_error("cannot read the prompt file", source, error) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError("invalid-request", "the prompt is not UTF-8 text") from None


def parse_pairs(items: Sequence[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` items; VALUE is parsed as JSON when it is JSON, else kept as text."""
    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError("invalid-request", f"{option} needs KEY=VALUE, got {item[:40]!r}")
        try:
            config[key] = json.loads(value)
        except ValueError:
            config[key] = value
        except RecursionError:  # JSON, but nested past the interpreter's depth
            raise CliError("invalid-request", f"{option} {key[:40]}: nested too deeply") from None
    return config


def check_workspace(path: str | None) -> str:
    workspace = os.path.abspath(path or os.getcwd())
    if not os.path.exists(workspace):
        raise CliError("invalid-request", f"the workspace {workspace[-200:]} does not exist")
    if not os.path.isdir(workspace):
        raise CliError("invalid-request", f"the workspace {workspace[-200:]} is not a directory")
    return workspace


def check_harness(plugins: Any, name: str) -> None:
    if name not in plugins.harnesses:
        known = ", ".join(plugins.harness_names()) or "none installed"
        raise CliError("invalid-request", f"unknown harness {name[:64]!r} (installed: {known})")


def check_names(args: argparse.Namespace, plugins: Any) -> None:
    """Unknown harness or sandbox provider: say which ones are installed."""
    check_harness(plugins, args.name)
    sandbox = getattr(args, "sandbox", None)
    if sandbox is not None and sandbox not in plugins.sandbox_providers:
        known = ", ".join(sorted(plugins.sandbox_providers)) or "none installed"
        raise CliError(
            "invalid-request", f"unknown sandbox provider {sandbox[:64]!r} (installed: {known})"
        )
    if args.posture == "dangerous" and args.network == "open":
        raise CliError(
            "policy-refused",
            "the dangerous posture needs a closed network: add --network none, mcp-only or "
            "allowlist and a --sandbox that enforces it",
        )


def sandbox_spec(args: argparse.Namespace) -> Any:
    """``--sandbox/--scope/--network/--allow/--sandbox-config`` as a ``SandboxSpec``."""
    from harness_hookspecs import SandboxSpec

    config = parse_pairs(args.sandbox_config, "--sandbox-config")
    try:
        return SandboxSpec(
            provider=args.sandbox,
            scope=args.scope,
            network=args.network,
            allow=args.allow,
            config=config,
        )
    except (TypeError, ValueError) as error:
        raise CliError("invalid-request", str(error).splitlines()[0][:200]) from None
