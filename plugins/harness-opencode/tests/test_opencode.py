"""The OpenCode adapter against the real CLI (opencode-ai 1.18.x) and the fake model server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from harness_cli_kit.approval_testing import (
    APPROVED,
    ApprovalScenarios,
    approval_script,
    permission_events,
)
from harness_cli_kit.testing import CliScenarios, state_text
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)
from harness_opencode import ServeEvents, parse_events
from harness_opencode.adapter import STATE_FILE, classify, message_body, permission_rules

from harness_core.testing.fake_model import FakeModelServer, ToolCall

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


class TestApprovals(ApprovalScenarios):
    touch = ToolCall("bash", {"command": "touch approved.txt", "description": "touch"})
    shell_tool = "bash"

    @staticmethod
    def remove(victim: str) -> ToolCall:
        return ToolCall("bash", {"command": f"rm -rf {victim}", "description": "clean"})


@pytest.mark.cli
def test_strict_posture_without_a_host_denies_and_the_turn_goes_on(cli):
    script = approval_script(TestApprovals.touch)
    with FakeModelServer(script) as server:
        result, _ = cli.turn(cli.config(cli.url(server)), "create approved.txt", posture="strict")
        requests = server.model_requests()
    assert result.status == "completed" and result.text == "Finished.", result
    assert not (Path(cli.workspace) / APPROVED).exists()
    _, resolved = permission_events(result)
    assert [(r.decision, r.source) for r in resolved] == [("deny", "policy")]
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok
    # the reject's message (the decision's reason) reached the model as the call's result
    assert "no approver allowed the call" in json.dumps(requests[-1].body)


S = "ses_1"


def part(kind, part_id, message="msg_a", **fields):
    body = {"id": part_id, "messageID": message, "sessionID": S, "type": kind, **fields}
    return {"type": "message.part.updated", "properties": {"sessionID": S, "part": body}}


def delta(part_id, text, message="msg_a"):
    props = {"sessionID": S, "messageID": message, "partID": part_id, "field": "text"}
    return {"type": "message.part.delta", "properties": {**props, "delta": text}}


def test_parse_events_maps_the_sessions_events():
    finish = {
        "reason": "stop",
        "cost": 0,
        "tokens": {"input": 3, "output": 2, "reasoning": 0, "cache": {"read": 1, "write": 0}},
    }
    user = {
        "type": "message.updated",
        "properties": {"sessionID": S, "info": {"id": "msg_u", "role": "user"}},
    }
    events = [
        user,
        part("text", "prt_u", message="msg_u", text="the prompt", time={"start": 1, "end": 2}),
        part("text", "prt_t", text="", time={"start": 1}),
        delta("prt_t", "Hi"),
        delta("prt_u", "never: the user's part"),
        {
            "type": "message.part.delta",
            "properties": {
                "sessionID": "ses_other",
                "partID": "prt_t",
                "field": "text",
                "delta": "a sub-agent's",
            },
        },
        delta("prt_t", "."),
        part("text", "prt_t", text="Hi.", time={"start": 1, "end": 2}),
        part("tool", "prt_c", callID="c1", tool="bash", state={"status": "pending", "input": {}}),
        part(
            "tool",
            "prt_c",
            callID="c1",
            tool="bash",
            state={
                "status": "error",
                "input": {"command": "rm -rf /secret"},
                "error": "secret output",
            },
        ),
        part("step-finish", "prt_f", **finish),
    ]
    reply = {
        "info": {"id": "msg_a", "finish": "stop"},
        "parts": [part("step-finish", "prt_f", **finish)["properties"]["part"]],
    }
    payloads = parse_events(events, reply, S)
    assert payloads[:2] == [MessageDelta(text="Hi"), MessageDelta(text=".")]
    assert isinstance(payloads[2], ToolStarted) and isinstance(payloads[3], ToolCompleted)
    assert payloads[2].summary == "bash: rm -rf /secret"  # the audit line names the command
    assert not payloads[3].ok and "secret" not in repr(payloads[3:])
    assert payloads[4] == MessageCompleted(text="Hi.")
    usage = payloads[-2].usage  # the reply's step-finish part is the stream's: counted once
    assert (usage.input_tokens, usage.cache_read_tokens, usage.requests) == (3, 1, 1)
    assert usage.cost_usd is None  # OpenCode's 0 for an unpriced model: unknown
    assert payloads[-1] == TurnCompleted(text="Hi.")
    assert len(payloads) == 7


def test_structured_reply_and_a_text_only_answer():
    events = ServeEvents(S, structured=True)
    finish = part("step-finish", "prt_f", reason="tool-calls", cost=0, tokens={})
    events.event(finish)
    reply = {"info": {"structured": {"step": "done"}}}
    assert events.terminal(reply) == TurnCompleted(output={"step": "done"})
    # answered in text: the runtime judges the text (and retries), not a model error
    missing = {"name": "StructuredOutputError", "data": {"message": "x", "retries": 0}}
    assert events.terminal({"info": {"error": missing}}) == TurnCompleted()
    plain = ServeEvents(S)
    plain.event(finish)
    assert plain.terminal(reply).output is None  # no schema asked: no output


def test_permission_asks_carry_the_calls_input():
    events = ServeEvents(S)
    events.event(
        part(
            "tool",
            "prt_c",
            callID="c1",
            tool="bash",
            state={"status": "running", "input": {"command": "rm -rf /tmp/x"}},
        )
    )
    ask = {
        "id": "per_1",
        "sessionID": S,
        "permission": "external_directory",
        "patterns": ["/tmp/x/*"],
        "metadata": {},
        "always": [],
        "tool": {"messageID": "msg_a", "callID": "c1"},
    }
    events.event({"type": "permission.asked", "properties": ask})
    assert events.take_asks() == [ask] and events.take_asks() == []
    request, call_id = events.permission(ask)
    assert (request.tool, request.kind, request.command, call_id) == (
        "bash",
        "shell",
        "rm -rf /tmp/x",
        "c1",
    )
    assert request.request_id == "per_1"
    unseen = {
        **ask,
        "permission": "edit",
        "tool": {"messageID": "m", "callID": "c9"},
        "metadata": {"filepath": "/w/a.txt"},
    }
    request, _ = events.permission(unseen)
    assert (request.tool, request.kind, request.path) == ("edit", "write", "/w/a.txt")


def test_postures_map_to_permission_rules_and_the_schema_to_format():
    assert permission_rules("dangerous")["bash"] == "allow"
    assert permission_rules("strict") == permission_rules("auto")
    assert (
        permission_rules("auto")["bash"] == "ask" and permission_rules("auto")["question"] == "deny"
    )
    body = message_body("hi", "harness/fake", {"type": "object"})
    assert body["format"] == {"type": "json_schema", "schema": {"type": "object"}}
    assert body["model"] == {"providerID": "harness", "modelID": "fake"}
    assert "format" not in message_body("hi", "harness/fake", None)


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
    events = ServeEvents(S)
    assert events.terminal({"info": {"error": error}}) == TurnFailed(
        reason=reason, hint="opencode reported a model error"
    )
    events.event({"type": "session.error", "properties": {"sessionID": S, "error": error}})
    assert events.terminal({"info": {}}).reason == reason


@pytest.mark.cli
def test_a_session_opencode_does_not_know_is_session_not_found(cli):
    with FakeModelServer([]) as server:
        config = cli.config(cli.url(server))

        async def main():
            async with cli.controller() as c:
                ref = await cli.open_session(c, config)
                state = Path(c.live(ref.session_id).context.state_dir) / STATE_FILE
            state.write_text(json.dumps({"native_session_id": "ses_00000000000000000000000000"}))
            async with cli.controller(turn_timeout=60) as c:
                await c.resume_session(ref, workspace=cli.workspace, model=cli.model, config=config)
                return await c.run_turn(ref, "hello again")

        result = anyio.run(main)
        assert server.model_requests() == []
    assert result.status == "failed" and result.reason == "session-not-found", result
    assert [e.type for e in result.events].count("turn.failed") == 1


def test_the_announced_url_is_loopback_only_and_sse_data_is_json():
    from harness_opencode.server import listening_url, sse_data

    line = b"opencode server listening on http://127.0.0.1:41234"
    assert listening_url(line) == "http://127.0.0.1:41234"
    assert listening_url(b"opencode server listening on http://0.0.0.0:4096") is None
    assert listening_url(b"Warning: OPENCODE_SERVER_PASSWORD is not set") is None
    assert sse_data(['{"type": "server.connected",', ' "properties": {}}']) == {
        "type": "server.connected",
        "properties": {},
    }
    assert sse_data(["not json"]) is None and sse_data([]) is None
