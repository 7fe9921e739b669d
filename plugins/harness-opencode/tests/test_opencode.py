"""The OpenCode adapter against the real CLI (opencode-ai 1.18.x) and the fake model server."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import MessageDelta, ToolCompleted, ToolStarted, TurnCompleted, TurnFailed
from harness_opencode import parse_stream
from harness_opencode.adapter import classify

from harness_core.testing.fake_model import (
    ErrorReply,
    FakeModelServer,
    Match,
    Step,
    ToolCall,
    Usage,
)
from harness_core.testing.processes import alive, group_members

MODEL = "fake-model"


def config(server: FakeModelServer, opencode_bin: str, **extra):
    return {"command": [opencode_bin], "base_url": server.openai_base_url, **extra}


def tool_script():
    return [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("bash", {"command": "echo hello > out.txt", "description": "w"})],
            usage=Usage(100, 20),
        ),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(
    opencode_bin, workspace, make_controller
):
    with FakeModelServer(tool_script()) as server:

        async def first():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="opencode",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server, opencode_bin),
                )
                return ref, await c.run_turn(ref, "create out.txt")

        ref, result = anyio.run(first)
        assert result.status == "completed", result
        assert result.text == "Created out.txt."
        assert (Path(workspace) / "out.txt").read_text() == "hello\n"
        types = [e.type for e in result.events]
        assert types.index("tool.started") < types.index("tool.completed") < types.index("usage")
        tool = next(e.payload for e in result.events if e.type == "tool.completed")
        assert tool.name == "bash" and tool.ok and tool.summary == "ran a shell command"
        assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30
        assert result.usage.cost_usd is None  # no configured price: unknown, not zero
        assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
        # the key arrives only through the environment, never in the generated config
        state = Path(make_controller().state_root)
        assert "sk-test-secret-1234" not in "".join(
            p.read_text(errors="ignore") for p in state.rglob("*.json")
        )

        async def second():
            async with make_controller(turn_timeout=90) as c:
                await c.resume_session(
                    ref, workspace=workspace, model=MODEL, config=config(server, opencode_bin)
                )
                return await c.run_turn(ref, "say it again")

        result = anyio.run(second)
        assert result.status == "completed", result
        assert result.text == "Second turn reply."
        # the resumed request carried the first turn's history
        last = server.model_requests()[-1]
        assert "create out.txt" in json.dumps(last.body)
        assert [r.step_index for r in server.model_requests() if r.tool_names] == [0, 1, 2]


@pytest.mark.cli
def test_cancel_mid_turn_leaves_no_process(opencode_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:

        async def main():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="opencode",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server, opencode_bin),
                )
                async with c.turn(ref, "hang please") as turn:
                    async for event in turn:
                        if event.type == "status":
                            context = c._live[ref.session_id].context
                            # wait until the CLI is actually talking to the model
                            with anyio.fail_after(30):
                                while not server.model_requests():
                                    await anyio.sleep(0.1)
                            leader = context.turn_processes[0].pid
                            assert alive(leader)
                            started = time.monotonic()
                            await c.cancel_turn(ref, turn.turn_id)
                        last = event
                return last, leader, time.monotonic() - started

        last, leader, took = anyio.run(main)
    assert last.type == "turn.cancelled"
    assert took < 5
    assert not alive(leader) and group_members(leader) == []


@pytest.mark.cli
def test_401_is_authentication_required_fast(opencode_bin, workspace, make_controller):
    with FakeModelServer(
        [Step(error=ErrorReply(401, "secret upstream text"), times=None, match=Match(tools=None))]
    ) as server:

        async def main():
            async with make_controller(turn_timeout=60) as c:
                ref = await c.open_session(
                    harness="opencode",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server, opencode_bin),
                )
                return await c.run_turn(ref, "hi")

        started = time.monotonic()
        result = anyio.run(main)
    assert time.monotonic() - started < 30
    assert result.status == "failed" and result.reason == "authentication-required"
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
def test_unreachable_is_provider_unavailable_fast(opencode_bin, workspace, make_controller):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def main():
        async with make_controller(turn_timeout=60) as c:
            ref = await c.open_session(
                harness="opencode",
                workspace=workspace,
                model=MODEL,
                config={"command": [opencode_bin], "base_url": f"http://127.0.0.1:{port}/v1"},
            )
            return await c.run_turn(ref, "hi")

    started = time.monotonic()
    result = anyio.run(main)
    assert time.monotonic() - started < 10
    assert result.status == "failed" and result.reason == "provider-unavailable"


def test_garbage_output_is_provider_failed(workspace, make_controller):
    with FakeModelServer([]) as server:
        garbage = [sys.executable, "-c", "print('Traceback: secret provider text'); print('{')"]

        async def main():
            async with make_controller(turn_timeout=30) as c:
                ref = await c.open_session(
                    harness="opencode",
                    workspace=workspace,
                    model=MODEL,
                    config={"command": garbage, "base_url": server.openai_base_url},
                )
                return await c.run_turn(ref, "hi")

        result = anyio.run(main)
    assert result.status == "failed" and result.reason == "provider-failed"
    assert "secret provider text" not in repr(result.events)


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
    assert not payloads[2].ok and "secret" not in repr(payloads)
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
