"""The Codex adapter against the real CLI (0.171.x) and the fake model server."""

from __future__ import annotations

import json

import pytest
from harness_cli_kit.testing import (
    CheckedCliScenarios,
    assert_failed,
    state_text,
)
from harness_codex import CodexStream, parse_stream
from harness_codex.adapter import classify, render_config
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    ModelCompleted,
    ModelRequested,
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
    # Codex reports tokens but no cost: estimated from the price table, and marked so
    assert result.usage.cost_estimated and result.usage.cost_usd > 0
    assert server.model_requests()[0].headers.get("authorization")
    assert SECRET not in repr(result.events)
    # the key only ever lives in the environment, never in the generated config
    assert SECRET not in state_text(cli.state_root(), (".toml", ".json"))


class TestScenarios(CheckedCliScenarios):
    auth_within = unreachable_within = 10.0
    # request_max_retries = stream_max_retries = 1 by default: at most (1 + 1) * (1 + 1)
    requests_after_500 = range(1, 5)


def test_truncated_stream_is_provider_failed(tmp_path, cli):
    # an app-server that answers the handshake, starts the turn, then dies mid-line
    body = (
        'print(\'{"id":1,"result":{}}\')\n'
        'print(\'{"id":2,"result":{"thread":{"id":"t-1"}}}\')\n'
        'print(\'{"id":3,"result":{"turn":{"id":"u-1"}}}\')\n'
        'print(\'{"method":"item/completed","params":{"item":{"id":"i1","type":"agentMess\', '
        "flush=True)\n"
    )
    result = cli.fake_turn(tmp_path, body)
    assert_failed(result, "provider-failed")
    assert result.events[-1].payload.hint == "codex wrote an unreadable stream"


def line(data):
    return json.dumps(data).encode()


def note(method, **params):
    return line({"method": method, "params": params})


def item(kind, iid, **fields):
    return {"type": kind, "id": iid, **fields}


HANDSHAKE = [
    line({"id": 1, "result": {"userAgent": "codex"}}),
    line({"id": 2, "result": {"thread": {"id": "01a2"}}}),
    note("warning", message="Model metadata for `gpt-5` not found."),
    line({"id": 3, "result": {"turn": {"id": "t1", "status": "inProgress"}}}),
]


def test_parse_stream_maps_app_server_lines_and_hides_provider_text():
    command = "/bin/bash -lc 'rm -rf /secret'"
    lines = [
        *HANDSHAKE,
        note("item/agentMessage/delta", itemId="m1", delta="Hi"),
        note("item/completed", item=item("agentMessage", "m1", text="Hi.")),
        note("item/started", item=item("commandExecution", "c1", command=command)),
        note(
            "item/completed",
            item=item(
                "commandExecution",
                "c1",
                command=command,
                aggregatedOutput="secret",
                exitCode=1,
                status="failed",
            ),
        ),
        b"not json at all",
        note(
            "thread/tokenUsage/updated",
            tokenUsage={"last": {"inputTokens": 3, "cachedInputTokens": 1, "outputTokens": 2}},
        ),
        note("turn/completed", turn={"id": "t1", "status": "completed"}),
    ]
    everything = parse_stream(lines)
    # one model step around the response, closed by its token usage
    steps = [p for p in everything if isinstance(p, ModelRequested | ModelCompleted)]
    assert [type(p) for p in steps] == [ModelRequested, ModelCompleted]
    assert steps[1].usage.input_tokens == 3 and steps[1].duration_ms is not None
    payloads = [p for p in everything if p not in steps]
    assert payloads[0].message == "codex thread started"
    assert payloads[1] == MessageDelta(text="Hi")
    assert payloads[2] == MessageCompleted(text="Hi.")
    assert isinstance(payloads[3], ToolStarted) and isinstance(payloads[4], ToolCompleted)
    # the audit line names the script inside bash -lc, the outcome its exit code; the output
    # never crosses
    assert payloads[3].summary == "shell: rm -rf /secret"
    assert payloads[4].summary == "the shell call failed (exit code 1)"
    assert not payloads[4].ok and "secret" not in repr(payloads[4:])
    usage = payloads[5].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.requests) == (3, 1, 1)
    assert usage.cost_usd is None
    assert payloads[-1] == TurnCompleted(text="Hi.")


def waiting(will_retry=True):
    error = {
        "message": "Reconnecting... waiting for network",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": None}},
        "additionalDetails": "Connection failed: error sending request",
    }
    return note("error", error=error, willRetry=will_retry)


def test_waiting_for_network_ends_the_turn_at_once():
    payloads = parse_stream([*HANDSHAKE, waiting(), waiting()], exit_code=0)
    assert payloads[-1] == TurnFailed(
        reason="provider-unavailable", hint="the model endpoint was unreachable or overloaded"
    )
    assert len(payloads) == 2


def test_a_401_notice_ends_the_turn_even_when_codex_would_retry():
    error = {
        "message": "Reconnecting... 1/1",
        "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 401}},
        "additionalDetails": "unexpected status 401 Unauthorized: secret upstream text",
    }
    payloads = parse_stream([*HANDSHAKE, note("error", error=error, willRetry=True)])
    assert payloads[-1].reason == "authentication-required"
    assert "secret" not in repr(payloads)


def test_a_refused_resume_is_one_failure_with_a_fixed_hint():
    lines = [HANDSHAKE[0], line({"id": 2, "error": {"code": -32600, "message": "no rollout x"}})]
    stream = CodexStream(resume="01a2")
    payloads = [p for raw in lines for p in stream.feed(raw)] + stream.ending(0)
    assert payloads == [
        TurnFailed(reason="provider-failed", hint="codex could not resume the thread")
    ]


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
    # Codex 0.171 refuses approval_policy in config.toml: thread/start carries it
    assert 'sandbox_mode = "workspace-write"' in text and "approval_policy" not in text
    assert "request_max_retries = 1" in text and "stream_max_retries = 1" in text
