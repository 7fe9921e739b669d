"""``harness run``'s parser: every option of running one turn (the command is
:func:`harness_core.cli.run.cmd_run`). Plugins add options through ``add_run_options``."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import lazy
from .args import LEDGER_HELP, count, positive_number, positive_seconds


def register_commands(commands: Any) -> None:
    commands.add(
        "run",
        "run one turn (opening or resuming a session): the answer as it streams",
        lazy("run", "cmd_run"),
        add_arguments,
        json_help="print every event as JSON Lines",
    )


def add_arguments(p: ArgumentParser) -> None:
    """The options of ``harness run``, in the order ``--help`` shows them (the plugins' run
    options follow)."""
    if hasattr(p, "intermixed"):  # the CLI's own parser class: options anywhere among words
        p.intermixed = True  # type: ignore[attr-defined]
    p.add_argument("name", nargs="?", help="harness name (not needed with --session or --continue)")
    p.add_argument(
        "prompt", nargs="?", help="the prompt; - (or piped stdin without PROMPT) reads stdin"
    )
    p.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="resume the newest open session in the ledger",
    )
    p.add_argument("--prompt-file", metavar="FILE", help="read the prompt from FILE (- = stdin)")
    p.add_argument("--session", help="resume this session id instead of opening a new one")
    p.add_argument("--workspace", help="workspace directory (default: current directory)")
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument("--model", help="model for the session (passed to the harness)")
    p.add_argument("--posture", choices=("strict", "auto", "dangerous"), help="default: auto")
    p.add_argument(
        "--grant-dangerous",
        action="store_true",
        help="grant this run the dangerous posture (refused without it)",
    )
    _sandbox_arguments(p)
    p.add_argument("--agent", help="who the session runs for (agent-level credential grants)")
    p.add_argument("--user", help="the user the agent works for (agent-user workspaces)")
    p.add_argument("--timeout", type=positive_seconds, help="turn deadline in seconds")
    p.add_argument("--max-events", type=count(1), help="event-count limit for the turn")
    p.add_argument(
        "--approve",
        action="store_true",
        help="ask on the terminal (y/n) before each tool call (implies --posture strict)",
    )
    _budget_arguments(p)
    p.add_argument(
        "--output-schema",
        metavar="FILE",
        help="a JSON Schema file the final answer must match; prints the parsed answer",
    )
    p.add_argument(
        "--output-retries",
        type=count(0),
        metavar="N",
        help="retries of an answer that does not match --output-schema (default 2)",
    )
    p.add_argument(
        "--instructions",
        metavar="FILE",
        help="the host's instructions for the harness (a new session; its system prompt where "
        "the CLI has one, else before the first prompt)",
    )
    p.add_argument(
        "--no-record-thinking",
        dest="record_thinking",
        action="store_false",
        help="keep the model's thinking out of the ledger (a new session; counts only)",
    )
    p.add_argument("--close", action="store_true", help="close the session after the turn")
    p.add_argument(
        "--checkpoints",
        action="store_true",
        help="snapshot the workspace before and after the turn (harness diff, harness rewind)",
    )
    p.add_argument("--events", action="store_true", help="one line per event instead")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="harness configuration (VALUE parsed as JSON when it is JSON); repeatable",
    )


def _sandbox_arguments(p: ArgumentParser) -> None:
    p.add_argument("--sandbox", metavar="PROVIDER", help="sandbox provider (see harness plugins)")
    p.add_argument(
        "--scope",
        default="run",
        choices=("run", "agent", "agent-user"),
        help="workspace scope: a fresh one per run, or durable per agent / agent+user",
    )
    p.add_argument(
        "--network",
        default="open",
        choices=("none", "mcp-only", "allowlist", "open"),
        help="sandbox network policy (default: open)",
    )
    p.add_argument(
        "--allow", action="append", default=[], metavar="HOST:PORT", help="allowlist entry"
    )
    p.add_argument(
        "--sandbox-config", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )


def _budget_arguments(p: ArgumentParser) -> None:
    p.add_argument("--max-turns", type=count(1), help="session budget: turns (all runs)")
    p.add_argument("--max-cost", type=positive_number, metavar="USD", help="session budget")
    p.add_argument("--max-tokens", type=count(1), help="session budget: input + output tokens")
    p.add_argument(
        "--max-wall-clock", type=positive_seconds, metavar="SECONDS", help="session budget: seconds"
    )
