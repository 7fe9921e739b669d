"""``harness policy check 'CMD'``: the ``auto`` posture's verdict on a command, and the rule."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .errors import CliError
from .exits import EXIT_OK, EXIT_TURN_FAILED
from .output import print_json


def cmd_policy(args: argparse.Namespace) -> int:
    """Print ``VERDICT RULE: REASON`` (or one JSON object); exit 0 for allow, 1 otherwise."""
    from harness_hookspecs import PermissionRequest

    from ..command_policy import CommandPolicy
    from .prompt import check_workspace

    policy = CommandPolicy.from_config(_policy_config(args.policy))
    workspace = check_workspace(args.workspace)
    if args.path is not None:
        request = PermissionRequest.for_tool(
            "Write" if args.kind == "write" else "Read", kind=args.kind, path=args.path
        )
    else:
        if not args.command_line:
            raise CliError("invalid-request", "name a command to check (or --path)")
        request = PermissionRequest.for_tool(
            "Bash", kind="shell", command=args.command_line, input={"command": args.command_line}
        )
    judged = policy.judge(request, workspace)
    if args.json:
        print_json(
            {
                "verdict": judged.verdict,
                "rule": judged.rule,
                "reason": judged.reason,
                "command": judged.command,
            }
        )
    else:
        detail = f": {judged.reason}" if judged.reason else ""
        where = f" (in: {judged.command})" if judged.command and judged.verdict != "allow" else ""
        print(f"{judged.verdict} {judged.rule}{detail}{where}")
    return EXIT_OK if judged.verdict == "allow" else EXIT_TURN_FAILED


def _policy_config(path: str | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError:
        raise CliError("invalid-request", "the --policy file cannot be read") from None
    except (ValueError, RecursionError):
        raise CliError("invalid-request", "the --policy file is not JSON") from None


def add_arguments(parser: Any) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="the verdict and the rule for one command")
    check.add_argument("command_line", nargs="?", metavar="COMMAND", help="the shell command")
    check.add_argument("--json", action="store_true", help="one JSON object")
    check.add_argument("--workspace", help="the workspace (default: the current directory)")
    check.add_argument(
        "--policy", metavar="FILE", help="a JSON command_policy (rules, allow/ask/deny, ...)"
    )
    check.add_argument("--path", help="check a file tool's path instead of a command")
    check.add_argument(
        "--kind",
        choices=("read", "write"),
        default="write",
        help="with --path: whether the file tool reads or writes it (default write)",
    )
