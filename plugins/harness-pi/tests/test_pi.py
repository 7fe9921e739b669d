"""The Pi adapter against the real CLI (@mariozechner/pi-coding-agent 0.73.x) and the fake model."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from harness_cli_kit.approval_testing import ApprovalScenarios, approval_script, approval_turn
from harness_cli_kit.testing import (
    CliScenarios,
    assert_failed,
    state_text,
    unreachable_url,
)
from harness_hookspecs import (
    MessageDelta,
    PermissionDecision,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)
from harness_pi import PiAdapter, parse_stream
from harness_pi.adapter import classify

from harness_core.testing.fake_model import FakeModelServer, ToolCall

SECRET = "sk-test-secret-1234"  # injected by conftest


@pytest.mark.cli
@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_turn_tool_call_usage_and_resume_in_new_controller(cli, api):
    bash = ToolCall("bash", {"command": "echo hello > out.txt"})
    endpoint = "anthropic" if api == "anthropic-messages" else "openai"
    _, result = cli.tool_turn_and_resume(bash, "bash", endpoint=endpoint, timeout=60, api=api)
    assert "message.delta" in [e.type for e in result.events]
    assert result.usage.requests == 2
    assert SECRET not in state_text(cli.state_root())


class TestScenarios(CliScenarios):
    auth_within = 20.0


@pytest.mark.cli
def test_unreachable_without_preflight_is_provider_unavailable_fast(cli):
    result, took = cli.turn(cli.config(unreachable_url("/v1"), preflight=False))
    # without the probe Pi itself gives up in ~3 s (its own retries are off)
    assert took < 15
    assert_failed(result, "provider-unavailable")


def test_parse_stream_maps_native_lines():
    lines = [
        b'{"type":"session","id":"01a2","cwd":"/w"}',
        b'{"type":"agent_start"}',
        b'{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Hi"}}',
        b'{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hi"}],'
        b'"usage":{"input":3,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0}},"stopReason":"toolUse"}}',
        b'{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"cat /secret"}}',
        b'{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","isError":true,'
        b'"result":{"content":[{"type":"text","text":"secret output"}]}}',
        b"garbage",
        b'{"type":"agent_end","messages":[]}',
    ]
    payloads = parse_stream(lines)
    assert payloads[0] == MessageDelta(text="Hi")
    assert isinstance(payloads[2], ToolStarted) and isinstance(payloads[3], ToolCompleted)
    assert payloads[2].summary == "bash: cat /secret"  # the audit line names the command
    assert not payloads[3].ok and "secret output" not in repr(payloads)
    assert payloads[-2].usage.input_tokens == 3 and payloads[-2].usage.cost_usd is None
    assert payloads[-1] == TurnCompleted(text="Hi")


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("401 scripted failure", "authentication-required"),
        ("403 forbidden", "authentication-required"),
        ("Connection error.", "provider-unavailable"),
        ("503 overloaded", "provider-unavailable"),
        ("500 scripted failure", "provider-failed"),
        ("something odd", "provider-failed"),
    ],
)
def test_error_classification_and_exit_zero_is_not_success(message, reason):
    assert classify(message) == reason
    line = {
        "type": "message_end",
        "message": {
            "role": "assistant",
            "content": [],
            "stopReason": "error",
            "errorMessage": message,
        },
    }
    payloads = parse_stream([json.dumps(line).encode(), b'{"type":"agent_end"}'], exit_code=0)
    assert payloads[-1] == TurnFailed(reason=reason, hint="pi reported a model error")
    assert message not in repr(payloads)


class TestApprovals(ApprovalScenarios):
    """The shipped approval extension asks the host over RPC mode's extension UI requests."""

    touch = ToolCall("bash", {"command": "touch approved.txt"})
    shell_tool = "bash"

    @staticmethod
    def remove(victim: str) -> ToolCall:
        return ToolCall("bash", {"command": f"rm -rf {victim}"})


@pytest.mark.cli
def test_host_edits_the_input_and_the_edited_command_runs(cli):
    async def edit(request):
        return PermissionDecision.allow({**request.input, "command": "touch edited.txt"})

    result, _ = approval_turn(cli, TestApprovals.touch, edit)
    assert result.status == "completed", result
    assert (Path(cli.workspace) / "edited.txt").exists()
    assert not (Path(cli.workspace) / "approved.txt").exists()
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert (resolved.decision, resolved.source, resolved.edited) == ("allow", "host", True)


@pytest.mark.cli
def test_a_denied_call_is_reported_as_denied_and_the_model_hears_the_reason(cli):
    async def deny(request):
        return PermissionDecision.deny("not in this test")

    with FakeModelServer(approval_script(TestApprovals.touch)) as server:
        result, _ = approval_turn(cli, TestApprovals.touch, deny, serve=lambda _script: server)
        requests = server.model_requests()
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok and "denied" in tool.summary
    assert "not in this test" in json.dumps(requests[-1].body)


def test_describe_claims_permissions_and_structured_output():
    features = PiAdapter().describe().features
    assert "permissions" in features and "structured-output" in features


@pytest.mark.cli
def test_strict_asks_for_bash_but_not_for_the_hosts_bridge_tools(cli):
    """Host tools go through pi-mcp-adapter's proxy unasked (read-only, the host's own); the
    shell call in the same turn still asks."""
    from harness_hookspecs import HostTool

    from harness_core.testing.fake_model import Match, Step

    asked = []

    async def allow(request):
        asked.append(request.tool)
        return PermissionDecision.allow()

    async def lookup(arguments):
        return {"answer": "from-the-host-7f3a"}

    tool = HostTool(name="lookup", description="Look up", function=lookup, input_schema={})
    script = [
        Step(tool_calls=[ToolCall("lookup", {"q": "x"}, mcp_server="harness")]),
        Step(tool_calls=[TestApprovals.touch], match=Match(tool_result=True)),
        Step(text="Finished.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:

        async def main():
            async with cli.controller(permission_handler=allow, host_tools=[tool]) as c:
                ref = await c.open_session(
                    harness="pi",
                    workspace=cli.workspace,
                    model=cli.model,
                    config=cli.config(cli.url(server)),
                    posture="strict",
                )
                return await c.run_turn(ref, "look it up", timeout=90)

        result = anyio.run(main)
        requests = server.model_requests()
    assert result.status == "completed", result
    assert asked == ["bash"]
    assert "from-the-host-7f3a" in json.dumps(requests[1].body)
    names = [e.payload.name for e in result.events if e.type == "tool.started"]
    assert names == ["mcp", "bridge.lookup", "bash"]
    assert (Path(cli.workspace) / "approved.txt").exists()


def test_host_tools_without_the_extension_are_refused_with_one_line(monkeypatch, tmp_path):
    from harness_hookspecs import HarnessError
    from harness_pi.mcp import extension_path

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("HARNESS_CLI_PATH", raising=False)
    with pytest.raises(HarnessError) as error:
        extension_path({})
    assert error.value.reason == "provider-unavailable"
    with pytest.raises(HarnessError) as error:
        extension_path({"mcp_extension": str(tmp_path / "absent.ts")})
    assert error.value.reason == "invalid-request"


def test_a_prompt_is_never_an_extension_command():
    from harness_pi.rpc import turn_commands

    state, prompt = (json.loads(line) for line in turn_commands("/mcp setup").splitlines())
    assert state == {"id": "harness-state", "type": "get_state"}
    assert prompt["type"] == "prompt" and prompt["message"] == " /mcp setup"
    assert json.loads(turn_commands("@file -x").splitlines()[1])["message"] == "@file -x"
