"""The Claude Code adapter against the real CLI (2.1.x) and the fake model server."""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from harness_claude_code import parse_stream
from harness_claude_code.adapter import classify_result, permission_args
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)

from harness_core.testing.fake_model import (
    ErrorReply,
    FakeModelServer,
    Match,
    Step,
    ToolCall,
    Usage,
)
from harness_core.testing.processes import alive, group_members

MODEL = "claude-test"
SECRET = "sk-ant-test-secret-1234"  # injected by conftest.StaticCredentials


def config(server_url: str, claude_bin: str, **extra):
    return {"cli_path": claude_bin, "base_url": server_url, **extra}


def tool_script():
    return [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("Bash", {"command": "echo hello > out.txt", "description": "w"})],
            usage=Usage(100, 20),
        ),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]


async def one_turn(make_controller, workspace, cfg, prompt, timeout=60, **open_kwargs):
    async with make_controller(turn_timeout=timeout) as c:
        ref = await c.open_session(
            harness="claude-code", workspace=workspace, model=MODEL, config=cfg, **open_kwargs
        )
        return await c.run_turn(ref, prompt)


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(claude_bin, workspace, make_controller):
    with FakeModelServer(tool_script()) as server:

        async def first():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="claude-code",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.base_url, claude_bin),
                )
                return ref, await c.run_turn(ref, "create out.txt")

        ref, result = anyio.run(first)
        assert result.status == "completed", result
        assert result.text == "Created out.txt."
        assert (Path(workspace) / "out.txt").read_text() == "hello\n"
        types = [e.type for e in result.events]
        assert "message.delta" in types and "message.completed" in types
        assert types.index("tool.started") < types.index("tool.completed") < types.index("usage")
        tool = next(e.payload for e in result.events if e.type == "tool.completed")
        assert tool.name == "Bash" and tool.ok and tool.summary == "ran a shell command"
        assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30
        assert result.usage.cost_usd is not None and result.usage.cost_usd > 0
        assert result.usage.requests == 2
        assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
        # the injected key reached the CLI (the fake server redacts it) and is on no event
        assert server.model_requests()[0].headers.get("x-api-key")
        assert SECRET not in repr(result.events)
        # the controller's session id is the CLI's (--session-id on the first turn)
        state = Path(make_controller().state_root)
        assert list(state.rglob(f"projects/*/{ref.session_id}.jsonl"))

        async def second():
            async with make_controller(turn_timeout=90) as c:
                await c.resume_session(
                    ref,
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.base_url, claude_bin),
                )
                return await c.run_turn(ref, "say it again")

        result = anyio.run(second)
        assert result.status == "completed", result
        assert result.text == "Second turn reply."
        # the resumed request carried the first turn's history
        assert "create out.txt" in json.dumps(server.model_requests()[-1].body)
        assert [r.step_index for r in server.model_requests()] == [0, 1, 2]


@pytest.mark.cli
def test_strict_posture_denies_the_write_with_permission_events(
    claude_bin, workspace, make_controller
):
    script = [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("Bash", {"command": "echo hello > out.txt", "description": "w"})],
        ),
        Step(text="I was not allowed.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        cfg = config(server.base_url, claude_bin)
        result = anyio.run(
            lambda: one_turn(make_controller, workspace, cfg, "create out.txt", posture="strict")
        )
    assert result.status == "completed", result
    assert not (Path(workspace) / "out.txt").exists()
    types = [e.type for e in result.events]
    assert "permission.requested" in types and "permission.resolved" in types
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert resolved.decision == "deny" and resolved.source == "policy"
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok and "denied" in tool.summary
    assert "Output redirection" not in repr(result.events)  # the CLI's own text stays out


@pytest.mark.cli
def test_cancel_mid_turn_leaves_no_process(claude_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:

        async def main():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="claude-code",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.base_url, claude_bin),
                )
                async with c.turn(ref, "hang please") as turn:
                    async for event in turn:
                        if event.type == "status":
                            context = c._live[ref.session_id].context
                            with anyio.fail_after(30):  # the CLI is talking to the model
                                while not server.model_requests():
                                    await anyio.sleep(0.05)
                            leader = context.turn_processes[0].pid
                            assert alive(leader) and group_members(leader)
                            started = time.monotonic()
                            await c.cancel_turn(ref, turn.turn_id)
                        last = event
                return last, leader, time.monotonic() - started

        last, leader, took = anyio.run(main)
    print(f"\ncancel: turn.cancelled after {took:.2f}s")
    assert last.type == "turn.cancelled" and last.payload.by == "host"
    assert took < 5
    assert not alive(leader) and group_members(leader) == []


@pytest.mark.cli
def test_deadline_is_timeout_and_leaves_no_process(claude_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:
        cfg = config(server.base_url, claude_bin)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=4))
        took = time.monotonic() - started
    assert result.status == "failed" and result.reason == "timeout"
    assert took < 10


@pytest.mark.cli
def test_401_is_authentication_required_within_the_deadline(claude_bin, workspace, make_controller):
    step = Step(error=ErrorReply(401, "secret upstream text"), times=None, match=Match(tools=None))
    with FakeModelServer([step]) as server:
        cfg = config(server.base_url, claude_bin)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
        took = time.monotonic() - started
    print(f"\n401: {result.reason} after {took:.2f}s")
    assert result.status == "failed" and result.reason == "authentication-required"
    assert took < 10
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
def test_500_is_provider_unavailable_after_bounded_retries(claude_bin, workspace, make_controller):
    step = Step(error=ErrorReply(500, "secret upstream text"), times=None, match=Match(tools=None))
    with FakeModelServer([step]) as server:
        cfg = config(server.base_url, claude_bin, max_retries=1)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
        took = time.monotonic() - started
        requests = len(server.model_requests())
    print(f"\n500: {result.reason} after {took:.2f}s, {requests} requests")
    assert result.status == "failed" and result.reason == "provider-unavailable"
    assert requests == 2 and took < 10
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
def test_unreachable_is_provider_unavailable_within_the_deadline(
    claude_bin, workspace, make_controller
):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cfg = config(f"http://127.0.0.1:{port}", claude_bin)
    started = time.monotonic()
    result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
    took = time.monotonic() - started
    print(f"\nunreachable: {result.reason} after {took:.2f}s")
    assert result.status == "failed" and result.reason == "provider-unavailable"
    assert took < 10


@pytest.mark.cli
def test_dropped_stream_is_provider_failed(claude_bin, workspace, make_controller):
    step = Step(text="Hello there, this is cut", drop=True, times=None, match=Match(tools=None))
    with FakeModelServer([step]) as server:
        cfg = config(server.base_url, claude_bin, max_retries=0)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
        took = time.monotonic() - started
    print(f"\ndropped stream: {result.reason} after {took:.2f}s")
    assert result.status == "failed" and result.reason == "provider-failed"
    assert "ECONNRESET" not in repr(result.events)


def fake_cli(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-claude"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if '--version' in sys.argv:\n"
        "    print('2.1.332 (Claude Code)'); sys.exit(0)\n" + textwrap.dedent(body)
    )
    path.chmod(0o755)
    return str(path)


def test_garbage_stream_is_provider_failed(tmp_path, workspace, make_controller):
    cli = fake_cli(tmp_path, "print('Traceback: secret provider text'); print('{')\n")
    cfg = {"cli_path": cli, "base_url": "http://127.0.0.1:9"}
    result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
    assert result.status == "failed" and result.reason == "provider-failed"
    assert "secret provider text" not in repr(result.events)


def test_truncated_stream_is_provider_failed(tmp_path, workspace, make_controller):
    init = {"type": "system", "subtype": "init", "session_id": "x"}
    text = {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "Hi"}]},
    }
    cli = fake_cli(
        tmp_path,
        f"import json\nprint(json.dumps({init!r}))\nprint(json.dumps({text!r}))\n"
        'print(\'{"type": "result", "subtype"\', flush=True)\n',
    )
    cfg = {"cli_path": cli, "base_url": "http://127.0.0.1:9"}
    result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
    assert result.status == "failed" and result.reason == "provider-failed"


def test_missing_cli_is_provider_unavailable(tmp_path, workspace, make_controller):
    from harness_hookspecs import HarnessError

    cfg = {"cli_path": str(tmp_path / "nope"), "base_url": "http://127.0.0.1:9"}
    with pytest.raises(HarnessError) as info:
        anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi"))
    assert info.value.reason == "provider-unavailable"


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
    payloads = parse_stream(lines)
    assert payloads[1] == MessageDelta(text="Hi.")
    assert payloads[2] == MessageCompleted(text="Hi.")
    assert isinstance(payloads[3], ToolStarted) and isinstance(payloads[4], ToolCompleted)
    assert not payloads[4].ok and "secret" not in repr(payloads)
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
            reason="authentication-required", hint="the model endpoint rejected the credentials"
        )
    ]


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
    assert mode == "acceptEdits" and "Bash" in args[args.index("--allowedTools") + 1]
    args, _ = permission_args("auto", {"allowed_tools": ["Read"]})
    assert args[-1] == "Read"
    _, mode = permission_args("dangerous", {})
    assert mode in ("bypassPermissions", "acceptEdits")  # refused as root: acceptEdits + all
