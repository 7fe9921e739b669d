"""``harness conformance NAME``: the kit's scenario shown as it runs, then the checks one by one.

The kit judges its checks after the scenario has run, so what can honestly be shown while it
runs is the scenario itself: an ``on_event`` observer (registered only on the kit's own
:class:`Plugins`) prints a line per session opened and per turn ended, on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from harness_hookspecs import Event, hookimpl

from .errors import EXIT_OK, EXIT_TURN_FAILED
from .output import Out, print_json
from .prompt import check_harness


class ScenarioProgress:
    """Observer: one stderr line per session opened or resumed and per turn ended."""

    def __init__(self, out: Out) -> None:
        self.out = out
        self.started = time.monotonic()
        self.sessions: dict[str, int] = {}
        self.turns = 0

    @hookimpl
    def on_event(self, event: Event) -> None:
        number = self.sessions.setdefault(event.session_id, len(self.sessions) + 1)
        stamp = f"[{time.monotonic() - self.started:5.1f}s]"
        if event.type in ("session.opened", "session.resumed", "session.closed"):
            self.out.line(f"{stamp} session {number}: {event.type.split('.')[1]}", "dim")
        elif event.terminal:
            self.turns += 1
            outcome = event.type.split(".")[1]
            reason = getattr(event.payload, "reason", None)
            detail = f" ({reason})" if reason else ""
            self.out.line(
                f"{stamp} turn {self.turns} in session {number}: {outcome}{detail}", "dim"
            )


def cmd_conformance(args: argparse.Namespace) -> int:
    from ..conformance import run_conformance
    from ..plugins import Plugins

    plugins = Plugins()
    if args.name not in plugins.harnesses:
        kit = _plugin_kit(plugins, args.name)
        if kit is not None:  # a sandbox provider's or a credential resolver's kit
            report = kit(args.name, plugins)
            if args.json:
                print_json(report.to_dict())
            else:
                _show(report, Out())
            return EXIT_OK if report.passed else EXIT_TURN_FAILED
    check_harness(plugins, args.name)
    err = Out(sys.stderr)
    if not args.json:
        err.line(f"running the conformance kit against {args.name}...", "bold")
        plugins.register(ScenarioProgress(err), name="harness-cli-progress")
    report = run_conformance(
        args.name, workspace=args.workspace, plugins=plugins, timeout=args.timeout
    )
    if args.json:
        print_json(report.to_dict())
    else:
        _show(report, Out())
    return EXIT_OK if report.passed else EXIT_TURN_FAILED


def _plugin_kit(plugins: Any, name: str) -> Any:
    """The kit for ``name`` when it is a sandbox provider or a credential resolver, else None."""
    from ..conformance.plugin_kits import run_credentials_conformance, run_sandbox_conformance

    if name in plugins.sandbox_providers:
        return run_sandbox_conformance
    if name in plugins.credential_resolvers:
        return run_credentials_conformance
    return None


def _show(report: Any, out: Out) -> None:
    width = max((len(c.name) for c in report.checks), default=5)
    out.line(f"harness conformance: {report.harness}", "bold")
    colours = {"PASS": "green", "SKIP": "yellow", "FAIL": "bold red"}
    for check in report.checks:
        out.write("  ")
        out.write(check.mark, colours[check.mark])
        out.line(f"  {check.name:<{width}}  {check.detail}")
    out.line(
        f"{report.counts()} ({report.duration:.1f}s)",
        "bold green" if report.passed else "bold red",
    )
