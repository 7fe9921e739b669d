"""The Codex adapter against the real CLI (0.171.x) and the fake model server."""

from __future__ import annotations

import pytest
from harness_cli_kit.testing import (
    CheckedCliScenarios,
    assert_failed,
    state_text,
)
from harness_codex import parse_stream
from harness_codex.adapter import classify, render_config
from harness_hookspecs import (
    MessageCompleted,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)

from harness_core.testing.fake_model import ToolCall

SECRET = "sk-test-secret-5678"  # injected by conftest


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(cli):
    shell = ToolCall("exec_command", {"cmd": "echo hello > out.txt"})
    # the default posture (auto) is Codex's workspace-write sandbox, and the command ran
    server, result = cli.tool_turn_and_resume(shell, "shell")
    assert result.usage.cost_usd is None  # Codex reports no cost: unknown, not zero
    assert server.model_requests()[0].headers.get("authorization")
    assert SECRET not in repr(result.events)
    # the key only ever lives in the environment, never in the generated config
    assert SECRET not in state_text(cli.state_root(), (".toml", ".json"))


def test_strict_posture_is_refused_codex_exec_cannot_ask(cli):
    from harness_hookspecs import HarnessError

    assert "permissions" not in cli.controller().describe("codex").features
    with pytest.raises(HarnessError) as info:
        cli.turn({"base_url": "http://127.0.0.1:9/v1"}, "create out.txt", posture="strict")
    assert info.value.reason == "unsupported-feature"


class TestScenarios(CheckedCliScenarios):
    auth_within = unreachable_within = 10.0
    # request_max_retries = stream_max_retries = 1 by default: at most (1 + 1) * (1 + 1)
    requests_after_500 = range(1, 5)


def test_truncated_stream_is_provider_failed(tmp_path, cli):
    body = (
        'print(\'{"type":"thread.started","thread_id":"t-1"}\')\n'
        'print(\'{"type":"turn.started"}\')\n'
        'print(\'{"type":"item.completed","item":{"id":"i1","type":"agent_mess\', flush=True)\n'
    )
    assert_failed(cli.fake_turn(tmp_path, body), "provider-failed")


def test_parse_stream_maps_native_lines_and_hides_provider_text():
    lines = [
        b'{"type":"thread.started","thread_id":"01a2"}',
        b'{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata'
        b' for `gpt-5` not found."}}',
        b'{"type":"turn.started"}',
        b'{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Hi."}}',
        b'{"type":"item.started","item":{"id":"item_2","type":"command_execution",'
        b'"command":"rm -rf /secret","status":"in_progress"}}',
        b'{"type":"item.completed","item":{"id":"item_2","type":"command_execution",'
        b'"command":"rm -rf /secret","aggregated_output":"secret","exit_code":1,"status":"failed"}}',
        b"not json at all",
        b'{"type":"turn.completed","usage":{"input_tokens":3,"cached_input_tokens":1,'
        b'"output_tokens":2,"reasoning_output_tokens":0}}',
    ]
    payloads = parse_stream(lines)
    assert payloads[0].message == "codex thread started"
    assert payloads[1] == MessageCompleted(text="Hi.")
    assert isinstance(payloads[2], ToolStarted) and isinstance(payloads[3], ToolCompleted)
    # the audit line names the command and the outcome its exit code; the output never crosses
    assert payloads[2].summary == "shell: rm -rf /secret"
    assert payloads[3].summary == "the shell call failed (exit code 1)"
    assert not payloads[3].ok and "secret" not in repr(payloads[3:])
    assert payloads[-2].usage.input_tokens == 3 and payloads[-2].usage.cache_read_tokens == 1
    assert payloads[-2].usage.cost_usd is None
    assert payloads[-1] == TurnCompleted(text="Hi.")


def test_waiting_for_network_ends_the_turn_at_once():
    lines = [
        b'{"type":"thread.started","thread_id":"01a2"}',
        b'{"type":"turn.started"}',
        b'{"type":"error","message":"Reconnecting... waiting for network (Connection failed)"}',
        b'{"type":"error","message":"Reconnecting... waiting for network (Connection failed)"}',
    ]
    payloads = parse_stream(lines, exit_code=0)
    assert payloads[-1] == TurnFailed(
        reason="provider-unavailable", hint="the model endpoint was unreachable or overloaded"
    )
    assert len(payloads) == 2


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            "unexpected status 401 Unauthorized: x, url: http://h/v1/responses",
            "authentication-required",
        ),
        ("Reconnecting... 1/5 (unexpected status 401 Unauthorized: x)", "authentication-required"),
        ("exceeded retry limit, last status: 429 Too Many Requests", "provider-unavailable"),
        (
            "We\u2019re currently experiencing high demand, which may cause temporary errors.",
            "provider-unavailable",
        ),
        ("unexpected status 503 Service Unavailable", "provider-unavailable"),
        ("stream disconnected before completion: error decoding response body", "provider-failed"),
        ("something else entirely", "provider-failed"),
    ],
)
def test_error_classification(message, reason):
    assert classify(message) == reason


def test_config_names_the_key_variable_not_the_key():
    text = render_config(
        base_url="http://127.0.0.1:1/v1",
        model="gpt-5",
        retries=1,
        posture="auto",
        wire_api="responses",
    )
    assert 'env_key = "HARNESS_CODEX_API_KEY"' in text
    assert 'sandbox_mode = "workspace-write"' in text and 'approval_policy = "never"' in text
    assert "request_max_retries = 1" in text and "stream_max_retries = 1" in text
