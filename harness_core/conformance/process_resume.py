"""Resume in a new *process*: what a host restarting (or another worker) does.

Between the kit's two controllers, a child Python process (``python -m
harness_core.conformance.process_resume``) loads the installed plugins, resumes the first session
by id from the same ledger and state directory, runs one ordinary turn and releases the session.
It prints the events it emitted as JSON Lines, which the kit adds to what its probe saw, so the
sequence, id and round-trip checks judge them too. A harness that keeps its memory only in the
process (a one-function harness without the ledger's history) resumes in-process but not here.

Not applicable (and said so) when resume is not claimed, the harness is registered in this
process only (no entry point a child could load), or the ledger is an object, not a URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import anyio
from attrs import define, field
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError

from ..serialize import event_from_dict, event_to_dict

#: Extra seconds the child gets over the per-turn timeout (interpreter start, plugin loading).
STARTUP_ALLOWANCE = 30.0


@define
class ProcessResume:
    """What the child-process resume saw (``Run.process_resume``)."""

    problems: list[str] = field(factory=list)
    note: str = ""
    not_applicable: str | None = None
    not_run: str | None = None


async def resume_in_new_process(run: Any) -> ProcessResume:
    """Resume ``run.main`` in a child process; its events join ``run.probe.events``."""
    outcome = ProcessResume()
    if run.main is None:
        outcome.not_run = run.open_error or run.descriptor_error or "no session was opened"
        return outcome
    if "resume" not in run.features:
        outcome.not_applicable = "resume is not claimed"
        return outcome
    if not isinstance(run.ledger, str):
        outcome.not_applicable = "the ledger is an object in this process (not a URL)"
        return outcome
    order = {
        "harness": run.name,
        "ledger": run.ledger,
        "state_dir": os.fspath(run.root / "state"),
        "session_id": run.main.session_id,
        "workspace": run.workspace,
        "model": run.profile.model,
        "config": dict(run.profile.config),
        "prompt": run.profile.prompt,
        "timeout": run.profile.turn_timeout or run.timeout,
    }
    try:
        text = json.dumps(order)
    except (TypeError, ValueError):
        outcome.not_applicable = "the profile's config is not JSON (cannot cross processes)"
        return outcome
    try:
        done = await anyio.run_process(
            [sys.executable, "-m", __name__, text],
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        outcome.not_run = "the child process could not start"
        return outcome
    _judge(run, outcome, done.returncode, done.stdout.decode("utf-8", "replace"))
    return outcome


def _judge(run: Any, outcome: ProcessResume, code: int, stdout: str) -> None:
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        records = [json.loads(line) for line in lines]
    except ValueError:
        outcome.problems.append(f"the child printed something that is not JSON (exit {code})")
        return
    summary = records[-1] if records and "result" in records[-1] else {"result": "no result"}
    if summary["result"] == "not-installed":
        outcome.not_applicable = "registered in this process only (no entry point to load)"
        return
    events: list[Event] = []
    for record in records:
        if "result" not in record:
            try:
                events.append(event_from_dict(record))
            except HarnessError:
                outcome.problems.append("the child emitted an event that does not load")
    run.probe.events.setdefault(run.main.session_id, []).extend(events)
    if summary["result"] != "ok":
        outcome.problems.append(f"resume in a new process: {summary['result']}")
        return
    types = [event.type for event in events]
    if types[:1] != ["session.resumed"]:
        outcome.problems.append("the child's resume did not emit session.resumed first")
    # Like ``resume``: the turn must end; whether it completes is ``turns-completed``'s concern.
    terminal = next((t for t in reversed(types) if t in TERMINAL_TYPES), None)
    if terminal is None:
        outcome.problems.append("the turn after resume in a new process did not end")
    else:
        outcome.note = f"resumed in a new process; next turn {terminal}"


# -- the child ---------------------------------------------------------------------------------


async def _child(order: dict[str, Any]) -> dict[str, Any]:
    from ..controller import Controller
    from ..plugin_manager import Plugins

    plugins = Plugins()
    if order["harness"] not in plugins.harnesses:
        return {"result": "not-installed"}
    emitted: list[Event] = []
    async with Controller(
        plugins=plugins,
        ledger=order["ledger"],
        state_dir=order["state_dir"],
        turn_timeout=order["timeout"],
    ) as controller:
        try:
            with anyio.fail_after(order["timeout"]):
                ref = await controller.resume_session(
                    order["session_id"],
                    workspace=order["workspace"],
                    model=order["model"],
                    config=order["config"],
                )
            emitted.extend(controller.events(ref.session_id)[-1:])
            result = await controller.run_turn(ref, order["prompt"], on_event=emitted.append)
        except HarnessError as error:
            return {"result": f"raised {error.reason}", "events": emitted}
        except TimeoutError:
            return {"result": "resume timed out", "events": emitted}
    return {"result": "ok" if result.status else "no result", "events": emitted}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    order = json.loads(args[0])
    outcome = anyio.run(_child, order)
    for event in outcome.pop("events", []):
        sys.stdout.write(json.dumps(event_to_dict(event)) + "\n")
    sys.stdout.write(json.dumps(outcome) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
