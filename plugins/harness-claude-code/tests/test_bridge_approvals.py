"""Claude Code's approvals through the session's MCP bridge (issue 14), with the real CLI against
the fake model: a session with host tools runs ``--permission-prompt-tool
mcp__harness__approve_tool_call``; the bridge hands each prompt to the adapter, which asks the
host's approval seam. The shared approval scenarios (allow writes the file, deny writes none,
no answer is a timeout deny, the auto posture's policy blocks ``rm -rf``) run on that path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from harness_cli_kit.approval_testing import (
    APPROVED,
    ApprovalScenarios,
    approval_turn,
    assert_one_terminal,
    permission_events,
)
from harness_hookspecs import HostTool, PermissionDecision
from harness_mcp_bridge import APPROVAL_TOOL
from harness_mcp_bridge.tools import RunCalls

from harness_core.testing.fake_model import ToolCall

TOUCH = ToolCall("Bash", {"command": "touch approved.txt", "description": "touch"})


async def _lookup(arguments: Any) -> str:
    return "nothing"


LOOKUP = HostTool(name="lookup", description="Look something up in the host", function=_lookup)


@pytest.fixture
def cli(cli):
    """The suite's harness, its sessions given a host tool (so they have a bridge)."""
    return dataclasses.replace(
        cli, controller=lambda **kwargs: cli.controller(host_tools=[LOOKUP], **kwargs)
    )


@pytest.fixture
def bridge_prompts(monkeypatch) -> list[dict[str, Any]]:
    """Every permission prompt the bridge answered (its arguments and answer)."""
    seen: list[dict[str, Any]] = []
    original = RunCalls.approve

    async def approve(self, arguments):
        outcome = await original(self, arguments)
        seen.append({"arguments": dict(arguments), "answer": outcome.text, "ok": outcome.ok})
        return outcome

    monkeypatch.setattr(RunCalls, "approve", approve)
    return seen


class TestBridgeApprovals(ApprovalScenarios):
    touch = TOUCH

    @staticmethod
    def remove(victim: str) -> ToolCall:
        return ToolCall("Bash", {"command": f"rm -rf {victim}", "description": "clean"})


@pytest.mark.cli
@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_the_prompt_goes_through_the_bridge_and_the_host_decides(cli, bridge_prompts, behavior):
    asked: list[Any] = []

    async def handler(request):
        asked.append(request)
        if behavior == "allow":
            return PermissionDecision.allow()
        return PermissionDecision.deny("not here")

    result, _ = approval_turn(cli, TOUCH, handler)
    assert result.status == "completed", result
    assert (Path(cli.workspace) / APPROVED).exists() == (behavior == "allow")
    # the CLI asked through the bridge's tool (once), and the host's answer went back as the
    # one text block Claude Code parses
    assert len(bridge_prompts) == 1, bridge_prompts
    prompt = bridge_prompts[0]
    assert prompt["arguments"]["tool_name"] == "Bash"
    assert prompt["arguments"]["input"]["command"] == "touch approved.txt"
    answer = json.loads(prompt["answer"])
    assert answer["behavior"] == behavior
    if behavior == "allow":
        assert answer["updatedInput"]["command"] == "touch approved.txt"
    else:
        assert answer["message"] == "not here"
    # recorded by the approval seam, keyed by the CLI's tool call id; not as a bridged tool call
    assert [r.tool for r in asked] == ["Bash"]
    requested, resolved = permission_events(result)
    assert [r.request_id for r in requested] == [prompt["arguments"]["tool_use_id"]]
    assert [(r.decision, r.source) for r in resolved] == [(behavior, "host")]
    names = [getattr(e.payload, "name", "") for e in result.events if e.type.startswith("tool.")]
    assert f"bridge.{APPROVAL_TOOL}" not in names
    completed = [e.payload for e in result.events if e.type == "tool.completed"]
    assert [(c.name, c.ok) for c in completed] == [("Bash", behavior == "allow")]
    if behavior == "deny":
        assert "denied" in completed[0].summary
    assert_one_terminal(result)


@pytest.mark.cli
def test_permission_prompt_stdio_keeps_the_stdio_protocol_with_a_bridge(cli, bridge_prompts):
    async def allow(request):
        return PermissionDecision.allow()

    config = lambda server: cli.config(cli.url(server), permission_prompt="stdio")  # noqa: E731
    result, _ = approval_turn(cli, TOUCH, allow, config=config)
    assert result.status == "completed", result
    assert (Path(cli.workspace) / APPROVED).exists()
    assert bridge_prompts == []
    _, resolved = permission_events(result)
    assert [(r.decision, r.source) for r in resolved] == [("allow", "host")]
