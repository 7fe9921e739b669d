"""Host tool hooks on real Claude Code (driven by the fake model): a before_tool hook matching
Bash and ``git push*`` denies the call and the model's next request carries its reason; an
after_tool hook sees the outcome of ``pytest -q``, off the turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import PermissionDecision

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall
from harness_core.tool_hooks import ToolHook


def _turn(cli: Any, command: str, hooks: list[ToolHook]) -> tuple[Any, list[Any]]:
    script = [
        Step(text="Running it.", tool_calls=[ToolCall("Bash", {"command": command})]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]

    async def main() -> Any:
        async with cli.controller(turn_timeout=90, tool_hooks=hooks) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=cli.config(cli.url(server)),
                posture="auto",
            )
            result = await controller.run_turn(ref, "go")
            with anyio.fail_after(10):
                while controller.after_tool.pending:
                    await anyio.sleep(0.01)
            return result

    with FakeModelServer(script) as server:
        result = anyio.run(main)
        requests = server.model_requests()
    return result, requests


@pytest.mark.cli
def test_before_tool_denies_git_push_and_the_model_reads_why(cli):
    def no_push(request: Any) -> Any:
        return PermissionDecision.deny("pushing is for humans")

    hooks = [ToolHook("before_tool", no_push, tool="Bash", command="git push*")]
    result, requests = _turn(cli, "git push origin main", hooks)
    assert result.status == "completed", result
    [resolved] = [e.payload for e in result.events if e.type == "permission.resolved"]
    assert (resolved.decision, resolved.source, resolved.reason) == (
        "deny",
        "host",
        "pushing is for humans",
    )
    assert "pushing is for humans" in json.dumps(requests[-1].body)


@pytest.mark.cli
def test_after_tool_sees_the_outcome_of_pytest(cli):
    Path(cli.workspace, "test_ok.py").write_text("def test_ok():\n    assert True\n")
    seen: list[tuple[Any, Any]] = []

    async def outcome(event: Any, started: Any) -> None:
        await anyio.sleep(0.2)  # slow: runs beside the turn, not in it
        seen.append((event.payload, started.payload if started else None))

    hooks = [
        ToolHook("after_tool", outcome, tool="Bash", command="pytest*"),
        ToolHook("after_tool", outcome, tool="Write"),  # matches nothing here
    ]
    result, _ = _turn(cli, "pytest -q", hooks)
    assert result.status == "completed", result
    [(completed, started)] = seen
    assert completed.name == "Bash" and completed.ok
    assert started.summary == "Bash: pytest -q"


@pytest.mark.cli
def test_after_tool_context_reaches_the_models_next_request(cli):
    Path(cli.workspace, "test_ok.py").write_text("def test_ok():\n    assert True\n")
    observed: list[str] = []

    async def skipped(event: Any, started: Any) -> str:
        await anyio.sleep(0.2)  # Claude Code waits for the hook's answer
        return f"after {started.payload.summary}: 3 tests were skipped; say so"

    def observe(event: Any, started: Any) -> str:
        observed.append(event.payload.call_id)
        return "an observing hook's answer reaches no model"

    hooks = [
        ToolHook("after_tool", skipped, tool="Bash", command="pytest*", adds_context=True),
        ToolHook("after_tool", observe, tool="Bash"),
    ]
    result, requests = _turn(cli, "pytest -q", hooks)
    assert result.status == "completed", result
    completed = [e.payload for e in result.events if e.type == "tool.completed"]
    assert [(c.name, c.ok) for c in completed] == [("Bash", True)]  # once, though two paths
    first, last = json.dumps(requests[0].body), json.dumps(requests[-1].body)
    text = "after Bash: pytest -q: 3 tests were skipped; say so"
    assert text not in first and text in last
    assert "reaches no model" not in last
    assert observed == [completed[0].call_id]
