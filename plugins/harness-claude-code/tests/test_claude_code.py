"""The Claude Code adapter against the real CLI (2.1.x) and the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_claude_code import parse_stream
from harness_claude_code.adapter import classify_result, permission_args
from harness_cli_kit.approval_testing import ApprovalScenarios
from harness_cli_kit.testing import (
    CheckedCliScenarios,
    assert_failed,
)
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    ModelRequested,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

SECRET = "sk-ant-test-secret-1234"  # injected by conftest


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(cli):
    bash = ToolCall("Bash", {"command": "echo hello > out.txt", "description": "w"})
    server, result = cli.tool_turn_and_resume(bash, "Bash")
    types = [e.type for e in result.events]
    assert "message.delta" in types and "message.completed" in types
    assert result.usage.cost_usd is not None and result.usage.cost_usd > 0
    assert result.usage.requests == 2
    # the injected key reached the CLI (the fake server redacts it) and is on no event
    assert server.model_requests()[0].headers.get("x-api-key")
    assert SECRET not in repr(result.events)
    # the controller's session id is the CLI's (--session-id on the first turn)
    assert list(cli.state_root().rglob(f"projects/*/{result.session.session_id}.jsonl"))


@pytest.mark.cli
def test_strict_posture_without_an_approver_denies_with_permission_events(cli):
    script = [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("Bash", {"command": "echo hello > out.txt", "description": "w"})],
        ),
        Step(text="I was not allowed.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        result, _ = cli.turn(cli.config(server.base_url), "create out.txt", posture="strict")
    assert result.status == "completed", result
    assert not (Path(cli.workspace) / "out.txt").exists()
    types = [e.type for e in result.events]
    assert "permission.requested" in types and "permission.resolved" in types
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert resolved.decision == "deny" and resolved.source == "policy"
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok and "denied" in tool.summary


class TestApprovals(ApprovalScenarios):
    touch = ToolCall("Bash", {"command": "touch approved.txt", "description": "touch"})

    @staticmethod
    def remove(victim: str) -> ToolCall:
        return ToolCall("Bash", {"command": f"rm -rf {victim}", "description": "clean"})


@pytest.mark.cli
def test_host_edits_the_input_and_the_edited_command_runs(cli):
    from harness_cli_kit.approval_testing import approval_turn
    from harness_hookspecs import PermissionDecision

    async def edit(request):
        return PermissionDecision.allow({**request.input, "command": "touch edited.txt"})

    touch = ToolCall("Bash", {"command": "touch approved.txt", "description": "touch"})
    result, _ = approval_turn(cli, touch, edit)
    assert result.status == "completed", result
    assert (Path(cli.workspace) / "edited.txt").exists()
    assert not (Path(cli.workspace) / "approved.txt").exists()
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert resolved.edited and resolved.decision == "allow"


class TestScenarios(CheckedCliScenarios):
    auth_within = unreachable_within = 10.0
    on_500 = {"max_retries": 1}
    requests_after_500 = range(2, 3)  # bounded retries: max_retries=1 is two requests


def test_truncated_stream_is_provider_failed(tmp_path, cli):
    init = {"type": "system", "subtype": "init", "session_id": "x"}
    text = {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "Hi"}]},
    }
    body = (
        f"import json\nprint(json.dumps({init!r}))\nprint(json.dumps({text!r}))\n"
        'print(\'{"type": "result", "subtype"\', flush=True)\n'
    )
    assert_failed(cli.fake_turn(tmp_path, body), "provider-failed")


def test_parse_stream_maps_native_lines_and_hides_provider_text():
    lines = [
        b'{"type":"system","subtype":"init","session_id":"s1"}',
        b'{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},'
        b'"parent_tool_use_id":null,"session_id":"s1"}',
        b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"Hi."}},"parent_tool_use_id":null}',
        b'{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hi."},'
        b'{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf /secret"}}]},'
        b'"parent_tool_use_id":null}',
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1",'
        b'"content":"secret output","is_error":true}]}}',
        b"not json at all",
        b'{"type":"result","subtype":"success","is_error":false,"result":"Hi.","session_id":"s1",'
        b'"total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":2,'
        b'"cache_read_input_tokens":1,"cache_creation_input_tokens":0}}',
    ]
    everything = parse_stream(lines)
    # message_start opened a model step (no message_stop here: it stays open)
    assert [p for p in everything if isinstance(p, ModelRequested)] == [ModelRequested()]
    payloads = [p for p in everything if not isinstance(p, ModelRequested)]
    assert payloads[1] == MessageDelta(text="Hi.")
    assert payloads[2] == MessageCompleted(text="Hi.")
    assert isinstance(payloads[3], ToolStarted) and isinstance(payloads[4], ToolCompleted)
    # the audit line names the command; the tool's output never crosses
    assert payloads[3].summary == "Bash: rm -rf /secret"
    assert not payloads[4].ok and "secret output" not in repr(payloads)
    assert payloads[-2].usage.input_tokens == 3 and payloads[-2].usage.cost_usd == 0.5
    assert payloads[-1] == TurnCompleted(text="Hi.")


def test_synthetic_error_message_is_not_forwarded():
    lines = [
        b'{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text",'
        b'"text":"Failed to authenticate. API Error: 401 secret"}]}}',
        b'{"type":"result","subtype":"success","is_error":true,"api_error_status":401,'
        b'"result":"Failed to authenticate. API Error: 401 secret"}',
    ]
    payloads = parse_stream(lines, exit_code=1)
    assert "secret" not in repr(payloads)
    assert isinstance(payloads[-1], TurnFailed)
    assert payloads[-1].reason == "authentication-required"


def test_api_retry_on_401_ends_the_turn_at_once():
    lines = [
        b'{"type":"system","subtype":"api_retry","attempt":1,"error_status":401}',
        b'{"type":"system","subtype":"api_retry","attempt":2,"error_status":401}',
    ]
    payloads = parse_stream(lines, exit_code=0)
    assert payloads == [
        TurnFailed(
            reason="authentication-required",
            hint="claude has no valid credentials: set ANTHROPIC_API_KEY (credentials-env "
            "passes it to the session) or grant it in grants.toml",
        )
    ]


def test_not_logged_in_is_authentication_required_not_a_model_error():
    """What claude 2.x prints with no key and no login (its synthetic message and result)."""
    lines = [
        b'{"type":"system","subtype":"init","session_id":"s1","model":"claude-opus-5-5"}',
        b'{"type":"assistant","session_id":"s1","error":"authentication_failed",'
        b'"is_api_error_message":true,"message":{"model":"<synthetic>","role":"assistant",'
        b'"content":[{"type":"text","text":"Not logged in \\u00b7 Please run /login"}]}}',
        b'{"type":"result","subtype":"success","is_error":true,"api_error_status":null,'
        b'"result":"Not logged in \\u00b7 Please run /login","terminal_reason":"api_error"}',
    ]
    payloads = parse_stream(lines, exit_code=1)
    assert isinstance(payloads[-1], TurnFailed)
    assert payloads[-1].reason == "authentication-required"
    assert "ANTHROPIC_API_KEY" in (payloads[-1].hint or "")
    assert "login" not in repr(payloads).lower()  # the CLI's text stays in the adapter


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        ({"api_error_status": 401, "result": "x"}, "authentication-required"),
        ({"api_error_status": 529, "result": "x"}, "provider-unavailable"),
        ({"api_error_status": 503, "result": "x"}, "provider-unavailable"),
        (
            {"api_error_status": None, "result": "API Error: Connection refused (ECONNREFUSED)"},
            "provider-unavailable",
        ),
        (
            {"api_error_status": None, "result": "API Error: Connection dropped (ECONNRESET)"},
            "provider-failed",
        ),
        ({"api_error_status": 400, "result": "bad"}, "provider-failed"),
    ],
)
def test_result_classification(result, reason):
    assert classify_result(result) == reason


def test_postures_map_to_permission_modes():
    assert permission_args("strict", {})[1] == "default"
    args, mode = permission_args("auto", {})
    # shell commands are not pre-allowed: they reach the approval seam (the command policy)
    assert mode == "acceptEdits" and "Bash" not in args[args.index("--allowedTools") + 1]
    # nor are file tools: beyond the working directory Claude Code asks, the policy judges
    pre_allowed = args[args.index("--allowedTools") + 1].split(",")
    assert not {"Read", "Edit", "Write", "Glob", "Grep"} & set(pre_allowed)
    args, _ = permission_args("auto", {"allowed_tools": ["Read"]})
    assert args[-1] == "Read"
    _, mode = permission_args("dangerous", {})
    assert mode in ("bypassPermissions", "acceptEdits")  # refused as root: acceptEdits + all


@pytest.mark.cli
def test_conformance_kit_runs_the_approvals_check_on_the_real_cli(cli):
    """The profile names an approval prompt (the fake model scripts a Bash call on it), so the
    kit's approvals check asks the host instead of skipping for want of a prompt."""
    from harness_core.conformance import run_conformance

    report = run_conformance("claude-code", timeout=60)
    checks = {c.name: c for c in report.checks}
    assert report.passed, [(c.name, c.detail) for c in report.checks if not c.passed]
    assert checks["approvals"].detail == "1 request(s) asked the host, denied and recorded"


@pytest.mark.cli
def test_an_answer_with_control_characters_completes_with_them_replaced(cli):
    # a model quoting a file with a form feed, or coloured output: an answer, not a failure
    with FakeModelServer([Step(text="page\x0cnext \x1b[1mbold\x1b[0m")]) as server:
        result, _ = cli.turn(cli.config(server.base_url), "show the file")
    assert result.status == "completed", result
    assert result.text == "page\ufffdnext \ufffd[1mbold\ufffd[0m"
