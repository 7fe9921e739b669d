"""The ``auto`` posture's built-in rules on real Claude Code (driven by the fake model): a
credential read and destructive SQL are stopped with the reason in the model's next request,
``pytest -q`` runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import PermissionDecision

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall


def _auto_turn(
    cli: Any, command: str, handler: Any = None, tool: str = "Bash", **tool_input: Any
) -> tuple[Any, list[Any]]:
    arguments = tool_input or {"command": command}
    script = [
        Step(text="Running it.", tool_calls=[ToolCall(tool, arguments)]),
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


@pytest.mark.cli
def test_a_read_tool_on_a_credential_store_asks_the_host_who_denies(cli):
    """Read is not pre-allowed in auto: Claude Code asks for a path outside its working
    directory, and the policy's credential-store rule sends it to the host."""
    key = os.path.expanduser("~/.ssh/id_rsa")
    asked: list[Any] = []

    async def deny(request: Any) -> Any:
        asked.append(request)
        return PermissionDecision.deny("keys are off limits")

    result, requests = _auto_turn(cli, "", deny, tool="Read", file_path=key)
    assert result.status == "completed", result
    assert [(r.tool, r.kind, r.path) for r in asked] == [("Read", "read", key)]
    resolved = _resolved(result)
    assert (resolved.decision, resolved.source) == ("deny", "host")
    assert "keys are off limits" in _tool_result_text(requests)


@pytest.mark.cli
def test_a_read_tool_in_the_workspace_runs_without_asking(cli):
    Path(cli.workspace, "notes.txt").write_text("workspace-note-42\n")
    asked: list[Any] = []

    async def record(request: Any) -> Any:
        asked.append(request)
        return PermissionDecision.deny("should not be asked")

    path = str(Path(cli.workspace, "notes.txt").resolve())
    result, requests = _auto_turn(cli, "", record, tool="Read", file_path=path)
    assert result.status == "completed", result
    assert asked == []
    assert "workspace-note-42" in _tool_result_text(requests)


@pytest.mark.cli
def test_a_write_tool_outside_the_workspace_is_denied_by_the_policy(cli, tmp_path):
    # in the home directory, not under /tmp (the policy counts /tmp as scratch)
    target = os.path.expanduser(f"~/.harness-test-{tmp_path.name}-planted.txt")
    try:
        result, requests = _auto_turn(cli, "", tool="Write", file_path=target, content="x")
        assert not os.path.exists(target)
    finally:
        Path(target).unlink(missing_ok=True)  # what a broken guard would have planted
    assert result.status == "completed", result
    resolved = _resolved(result)
    assert (resolved.decision, resolved.source) == ("deny", "policy")
    assert resolved.reason and resolved.reason in _tool_result_text(requests)
