"""The ``auto`` posture's built-in rules on real Claude Code (driven by the fake model): a
credential read and destructive SQL are stopped with the reason in the model's next request,
``pytest -q`` runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import PermissionDecision

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall


def _auto_turn(cli: Any, command: str, handler: Any = None) -> tuple[Any, list[Any]]:
    script = [
        Step(text="Running it.", tool_calls=[ToolCall("Bash", {"command": command})]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]

    async def main() -> Any:
        async with cli.controller(turn_timeout=90, permission_handler=handler) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=cli.config(cli.url(server)),
                posture="auto",
            )
            return await controller.run_turn(ref, "go")

    with FakeModelServer(script) as server:
        result = anyio.run(main)
        requests = server.model_requests()
    return result, requests


def _tool_result_text(requests: list[Any]) -> str:
    """What the CLI sent back to the model as the tool's result (the last request's body)."""
    return json.dumps(requests[-1].body)


def _resolved(result: Any) -> Any:
    [resolved] = [e.payload for e in result.events if e.type == "permission.resolved"]
    return resolved


@pytest.mark.cli
def test_a_credential_read_asks_the_host_who_denies(cli):
    asked: list[Any] = []

    async def deny(request: Any) -> Any:
        asked.append(request)
        return PermissionDecision.deny("keys are off limits")

    result, requests = _auto_turn(cli, "cat ~/.ssh/id_rsa", deny)
    assert result.status == "completed", result
    assert [r.command for r in asked] == ["cat ~/.ssh/id_rsa"]
    resolved = _resolved(result)
    assert (resolved.decision, resolved.source) == ("deny", "host")
    assert "keys are off limits" in _tool_result_text(requests)


@pytest.mark.cli
def test_destructive_sql_without_a_handler_is_denied_with_the_rules_reason(cli):
    result, requests = _auto_turn(cli, "psql -c 'DROP TABLE x'")
    assert result.status == "completed", result
    resolved = _resolved(result)
    assert (resolved.decision, resolved.source) == ("deny", "policy")
    reason = "DDL or destructive SQL through a database client; no approver allowed the call"
    assert resolved.reason == reason
    assert reason in _tool_result_text(requests)  # the model reads why
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok


@pytest.mark.cli
def test_pytest_runs_without_asking(cli):
    Path(cli.workspace, "test_ok.py").write_text("def test_ok():\n    assert True\n")
    asked: list[Any] = []

    async def record(request: Any) -> Any:
        asked.append(request)
        return PermissionDecision.deny("should not be asked")

    result, requests = _auto_turn(cli, "pytest -q", record)
    assert result.status == "completed", result
    assert asked == []
    resolved = _resolved(result)
    assert (resolved.decision, resolved.source) == ("allow", "policy")
    assert "1 passed" in _tool_result_text(requests)
