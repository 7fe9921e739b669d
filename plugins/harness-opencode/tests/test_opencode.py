"""The OpenCode adapter against the real CLI (opencode-ai 1.18.x) and the fake model server."""

from __future__ import annotations

import json

import pytest
from harness_cli_kit.testing import CliScenarios, state_text
from harness_hookspecs import MessageDelta, ToolCompleted, ToolStarted, TurnCompleted, TurnFailed
from harness_opencode import parse_stream
from harness_opencode.adapter import classify

from harness_core.testing.fake_model import ToolCall

SECRET = "sk-test-secret-1234"  # injected by conftest


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(cli):
    bash = ToolCall("bash", {"command": "echo hello > out.txt", "description": "w"})
    _, result = cli.tool_turn_and_resume(bash, "bash", tool_requests_only=True)
    assert result.usage.cost_usd is None  # no configured price: unknown, not zero
    # the key arrives only through the environment, never in the generated config
    assert SECRET not in state_text(cli.state_root())


class TestScenarios(CliScenarios):
    pass


def test_parse_stream_maps_native_lines():
    lines = [
        b'{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}',
        b'{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Hi."}}',
        b'{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"c1",'
        b'"state":{"status":"error","input":{"command":"rm -rf /secret"},"title":"rm -rf /secret"}}}',
        b"not json at all",
        b'{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":3,'
        b'"output":2,"reasoning":0,"cache":{"read":1,"write":0}},"cost":0}}',
    ]
    payloads = parse_stream(lines)
    assert payloads[0] == MessageDelta(text="Hi.")
    assert isinstance(payloads[1], ToolStarted) and isinstance(payloads[2], ToolCompleted)
    assert payloads[1].summary == "bash: rm -rf /secret"  # the audit line names the command
    assert not payloads[2].ok and "secret" not in repr(payloads[2:])
    assert payloads[-2].usage.input_tokens == 3 and payloads[-2].usage.cache_read_tokens == 1
    assert payloads[-1] == TurnCompleted(text="Hi.")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            {"name": "APIError", "data": {"statusCode": 401, "message": "x"}},
            "authentication-required",
        ),
        (
            {"name": "APIError", "data": {"message": "Cannot connect to API: Unable to connect."}},
            "provider-unavailable",
        ),
        ({"name": "APIError", "data": {"statusCode": 400, "message": "bad"}}, "provider-failed"),
        (
            {"name": "UnknownError", "data": {"message": "Unexpected server error"}},
            "provider-failed",
        ),
    ],
)
def test_error_classification(error, reason):
    assert classify(error) == reason
    payloads = parse_stream([json.dumps({"type": "error", "error": error}).encode()], exit_code=1)
    assert payloads[-1] == TurnFailed(reason=reason, hint="opencode reported a model error")
