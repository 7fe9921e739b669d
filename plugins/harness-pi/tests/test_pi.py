"""The Pi adapter against the real CLI (@mariozechner/pi-coding-agent 0.73.x) and the fake model."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import MessageDelta, ToolCompleted, ToolStarted, TurnCompleted, TurnFailed
from harness_pi import parse_stream
from harness_pi.adapter import classify

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


def config(server: FakeModelServer, pi_bin: str, api: str = "openai-completions", **extra):
    url = server.base_url if api == "anthropic-messages" else server.openai_base_url
    return {"command": [pi_bin], "base_url": url, "api": api, **extra}


def tool_script():
    return [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("bash", {"command": "echo hello > out.txt"})],
            usage=Usage(100, 20),
        ),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]


@pytest.mark.cli
@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_turn_tool_call_usage_and_resume_in_new_controller(pi_bin, workspace, make_controller, api):
    with FakeModelServer(tool_script()) as server:

        async def first():
            async with make_controller(turn_timeout=60) as c:
                ref = await c.open_session(
                    harness="pi",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server, pi_bin, api),
                )
                return ref, await c.run_turn(ref, "create out.txt")

        ref, result = anyio.run(first)
        assert result.status == "completed", result
        assert result.text == "Created out.txt."
        assert (Path(workspace) / "out.txt").read_text() == "hello\n"
        types = [e.type for e in result.events]
        assert "message.delta" in types
        assert types.index("tool.started") < types.index("tool.completed") < types.index("usage")
        tool = next(e.payload for e in result.events if e.type == "tool.completed")
        assert tool.name == "bash" and tool.ok and tool.summary == "ran a shell command"
        assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30
        assert result.usage.requests == 2
        assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
        state = Path(make_controller().state_root)
        assert "sk-test-secret-1234" not in "".join(
            p.read_text(errors="ignore") for p in state.rglob("*.json")
        )

        async def second():
            async with make_controller(turn_timeout=60) as c:
                await c.resume_session(
                    ref, workspace=workspace, model=MODEL, config=config(server, pi_bin, api)
                )
                return await c.run_turn(ref, "say it again")

        result = anyio.run(second)
        assert result.status == "completed", result
        assert result.text == "Second turn reply."
        assert "create out.txt" in json.dumps(server.model_requests()[-1].body)
        assert [r.step_index for r in server.model_requests()] == [0, 1, 2]


@pytest.mark.cli
def test_cancel_mid_turn_leaves_no_process(pi_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:

        async def main():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="pi", workspace=workspace, model=MODEL, config=config(server, pi_bin)
                )
                async with c.turn(ref, "hang please") as turn:
                    async for event in turn:
                        if event.type == "status":
                            context = c._live[ref.session_id].context
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
def test_401_is_authentication_required_fast(pi_bin, workspace, make_controller):
    with FakeModelServer(
        [Step(error=ErrorReply(401, "secret upstream text"), times=None, match=Match(tools=None))]
    ) as server:

        async def main():
            async with make_controller(turn_timeout=60) as c:
                ref = await c.open_session(
                    harness="pi", workspace=workspace, model=MODEL, config=config(server, pi_bin)
                )
                return await c.run_turn(ref, "hi")

        started = time.monotonic()
        result = anyio.run(main)
    assert time.monotonic() - started < 20
    assert result.status == "failed" and result.reason == "authentication-required"
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
@pytest.mark.parametrize("preflight", [True, False])
def test_unreachable_is_provider_unavailable_fast(pi_bin, workspace, make_controller, preflight):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def main():
        async with make_controller(turn_timeout=60) as c:
            ref = await c.open_session(
                harness="pi",
                workspace=workspace,
                model=MODEL,
                config={
                    "command": [pi_bin],
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "preflight": preflight,
                },
            )
            return await c.run_turn(ref, "hi")

    started = time.monotonic()
    result = anyio.run(main)
    # without the probe Pi itself gives up in ~3 s (its own retries are off)
    assert time.monotonic() - started < 15
    assert result.status == "failed" and result.reason == "provider-unavailable"


def test_garbage_output_is_provider_failed(workspace, make_controller):
    with FakeModelServer([]) as server:
        garbage = [sys.executable, "-c", "print('Traceback: secret provider text'); print('{')"]

        async def main():
            async with make_controller(turn_timeout=30) as c:
                ref = await c.open_session(
                    harness="pi",
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
    assert not payloads[3].ok and "secret" not in repr(payloads)
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
