"""Resume in a new *process*: what a host restarting (or another worker) does.

Between the kit's two controllers, a child Python process (``python -m
harness_core.conformance.process_resume``) loads the plugins, resumes the first session by id
from a copy of the ledger (so its turn, which the kit's probe does not watch, changes nothing the
other checks judge) and the same state directory, runs one ordinary turn and releases the
session. A harness that keeps what resume needs only in memory resumes in a new controller but
not here.

The child finds the harness among the installed entry points or, for an adapter registered in
this process only, imports it again by its module-level name (a class built with no arguments,
or an ``@harness`` function), with this process's ``sys.path``. Not applicable (and said so)
when resume is not claimed, the adapter cannot be rebuilt that way, or the ledger is an object,
not a URL.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from attrs import define, field
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError

from ..ledger import path_of

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
    ledger = _copied_ledger(run.ledger, run.root / "process-resume")
    if ledger is None:
        outcome.not_applicable = "the ledger cannot be copied for a child (not SQLite or JSONL)"
        return outcome
    order = {
        "harness": run.name,
        "rebuild": rebuild_spec(run.plugins.harnesses.get(run.name)),
        "ledger": ledger,
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
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
    except OSError:
        outcome.not_run = "the child process could not start"
        return outcome
    _judge(run, outcome, done.returncode, done.stdout.decode("utf-8", "replace"))
    return outcome


def _copied_ledger(ledger: Any, where: Path) -> str | None:
    """A URL of a copy of ``ledger`` under ``where`` (SQLite or JSONL), or ``None``."""
    if not isinstance(ledger, str) or ledger.partition(":")[0] not in ("sqlite", "jsonl"):
        return None
    scheme = ledger.partition(":")[0]
    source = path_of(ledger, scheme)
    where.mkdir(parents=True, exist_ok=True)
    copy = where / ("ledger.sqlite" if scheme == "sqlite" else "ledger-jsonl")
    try:
        if scheme == "jsonl":
            shutil.copytree(source, copy)
        else:
            with sqlite3.connect(source) as original, sqlite3.connect(copy) as target:
                original.backup(target)
    except (OSError, sqlite3.Error):
        return None
    return f"{scheme}:///{copy}" if scheme == "sqlite" else f"jsonl:{copy}"


def _judge(run: Any, outcome: ProcessResume, code: int, stdout: str) -> None:
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        summary = json.loads(lines[-1]) if lines else {}
    except ValueError:
        summary = {}
    if not isinstance(summary, dict) or "result" not in summary:
        outcome.problems.append(f"the child process gave no result (exit {code})")
        return
    if summary["result"] == "not-installed":
        outcome.not_applicable = "registered in this process only and not rebuildable there"
        return
    if summary["result"] != "ok":
        outcome.problems.append(f"resume in a new process: {summary['result']}")
        return
    types = [str(t) for t in summary.get("types", [])]
    if types[:1] != ["session.resumed"]:
        outcome.problems.append("the child's resume did not emit session.resumed first")
    # Like ``resume``: the turn must end; whether it completes is ``turns-completed``'s concern.
    terminal = next((t for t in reversed(types) if t in TERMINAL_TYPES), None)
    if terminal is None:
        outcome.problems.append("the turn after resume in a new process did not end")
    else:
        outcome.note = f"resumed in a new process; next turn {terminal}"


def rebuild_spec(adapter: Any) -> dict[str, str] | None:
    """How a child process can rebuild ``adapter``: its module and module-level name."""
    function = getattr(adapter, "function", None)  # a FunctionHarness: its decorated function
    target = function if callable(function) else type(adapter)
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", "")
    if adapter is None or not module or not name or "<" in name or module == "__main__":
        return None
    return {"module": module, "name": name, "kind": "function" if function else "class"}


def _rebuilt(spec: dict[str, str] | None) -> Any:
    """The adapter (or ``@harness`` function) ``spec`` names, or ``None``."""
    import importlib

    if spec is None:
        return None
    try:
        found: Any = importlib.import_module(spec["module"])
        for part in spec["name"].split("."):
            found = getattr(found, part)
        return found if spec["kind"] == "function" else found()
    except Exception:
        return None


# -- the child ---------------------------------------------------------------------------------


async def _child(order: dict[str, Any]) -> dict[str, Any]:
    from ..controller import Controller
    from ..plugin_manager import Plugins

    plugins = Plugins()
    if order["harness"] not in plugins.harnesses:
        adapter = _rebuilt(order.get("rebuild"))
        if adapter is None or not plugins.register(adapter):
            return {"result": "not-installed"}
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
            await controller.run_turn(ref, order["prompt"], on_event=emitted.append)
        except HarnessError as error:
            return {"result": f"raised {error.reason}"}
        except TimeoutError:
            return {"result": "resume timed out"}
    return {"result": "ok", "types": [event.type for event in emitted]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    order = json.loads(args[0])
    outcome = anyio.run(_child, order)
    sys.stdout.write(json.dumps(outcome) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
