"""The Codex adapter against the real CLI (0.171.x) and the fake model server."""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from harness_codex import parse_stream
from harness_codex.adapter import classify, render_config
from harness_hookspecs import (
    HarnessError,
    MessageCompleted,
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

MODEL = "gpt-5"
SECRET = "sk-test-secret-5678"  # injected by conftest.StaticCredentials


def config(server_url: str, codex_bin: str, **extra):
    return {"cli_path": codex_bin, "base_url": server_url, **extra}


def tool_script():
    return [
        Step(
            text="Creating it.",
            tool_calls=[ToolCall("exec_command", {"cmd": "echo hello > out.txt"})],
            usage=Usage(100, 20),
        ),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]


async def one_turn(make_controller, workspace, cfg, prompt, timeout=60, **open_kwargs):
    async with make_controller(turn_timeout=timeout) as c:
        ref = await c.open_session(
            harness="codex", workspace=workspace, model=MODEL, config=cfg, **open_kwargs
        )
        return await c.run_turn(ref, prompt)


@pytest.mark.cli
def test_turn_tool_call_usage_and_resume_in_new_controller(codex_bin, workspace, make_controller):
    with FakeModelServer(tool_script()) as server:

        async def first():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="codex",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.openai_base_url, codex_bin),
                )
                return ref, await c.run_turn(ref, "create out.txt")

        ref, result = anyio.run(first)
        assert result.status == "completed", result
        assert result.text == "Created out.txt."
        # the default posture (auto) is Codex's workspace-write sandbox, and the command ran
        assert (Path(workspace) / "out.txt").read_text() == "hello\n"
        types = [e.type for e in result.events]
        assert types.index("tool.started") < types.index("tool.completed") < types.index("usage")
        tool = next(e.payload for e in result.events if e.type == "tool.completed")
        assert tool.name == "shell" and tool.ok and tool.summary == "ran a shell command"
        assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30
        assert result.usage.cost_usd is None  # Codex reports no cost: unknown, not zero
        assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
        assert server.model_requests()[0].headers.get("authorization")
        assert SECRET not in repr(result.events)
        # the key only ever lives in the environment, never in the generated config
        state = Path(make_controller().state_root)
        assert SECRET not in "".join(
            p.read_text(errors="ignore") for p in state.rglob("*") if p.suffix in (".toml", ".json")
        )

        async def second():
            async with make_controller(turn_timeout=90) as c:
                await c.resume_session(
                    ref,
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.openai_base_url, codex_bin),
                )
                return await c.run_turn(ref, "say it again")

        result = anyio.run(second)
        assert result.status == "completed", result
        assert result.text == "Second turn reply."
        # the resumed request carried the first turn's history (same Codex thread)
        assert "create out.txt" in json.dumps(server.model_requests()[-1].body)
        assert [r.step_index for r in server.model_requests()] == [0, 1, 2]


@pytest.mark.cli
def test_strict_posture_is_a_read_only_sandbox(codex_bin, workspace, make_controller):
    script = [
        Step(
            text="Creating it.", tool_calls=[ToolCall("exec_command", {"cmd": "echo x > out.txt"})]
        ),
        Step(text="Could not.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        cfg = config(server.openai_base_url, codex_bin)
        result = anyio.run(
            lambda: one_turn(make_controller, workspace, cfg, "create out.txt", posture="strict")
        )
    assert result.status == "completed", result
    assert not (Path(workspace) / "out.txt").exists()
    # Codex 0.171 ran the command in its read-only sandbox (the model got "Read-only file
    # system") but emits no command_execution item for it: no successful tool event here.
    assert not [e for e in result.events if e.type == "tool.completed" and e.payload.ok]
    assert "Read-only file system" in json.dumps(server.model_requests()[-1].body)


@pytest.mark.cli
def test_cancel_mid_turn_leaves_no_process(codex_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:

        async def main():
            async with make_controller(turn_timeout=90) as c:
                ref = await c.open_session(
                    harness="codex",
                    workspace=workspace,
                    model=MODEL,
                    config=config(server.openai_base_url, codex_bin),
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
def test_deadline_is_timeout(codex_bin, workspace, make_controller):
    with FakeModelServer([Step(text="late", delay=60)]) as server:
        cfg = config(server.openai_base_url, codex_bin)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=4))
        took = time.monotonic() - started
    assert result.status == "failed" and result.reason == "timeout"
    assert took < 10


@pytest.mark.cli
@pytest.mark.parametrize(
    ("status", "reason"), [(401, "authentication-required"), (500, "provider-unavailable")]
)
def test_http_errors_are_mapped_within_the_deadline(
    codex_bin, workspace, make_controller, status, reason
):
    step = Step(
        error=ErrorReply(status, "secret upstream text"), times=None, match=Match(tools=None)
    )
    with FakeModelServer([step]) as server:
        cfg = config(server.openai_base_url, codex_bin)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
        took = time.monotonic() - started
        requests = len(server.model_requests())
    print(f"\n{status}: {result.reason} after {took:.2f}s, {requests} requests")
    assert result.status == "failed" and result.reason == reason
    # request_max_retries = stream_max_retries = 1 by default: at most (1 + 1) * (1 + 1) requests
    assert took < 10 and requests <= 4
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
def test_unreachable_is_provider_unavailable_fast(codex_bin, workspace, make_controller):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cfg = config(f"http://127.0.0.1:{port}/v1", codex_bin)

    async def main():
        async with make_controller(turn_timeout=30) as c:
            ref = await c.open_session(
                harness="codex", workspace=workspace, model=MODEL, config=cfg
            )
            result = await c.run_turn(ref, "hi")
            return result, c._live[ref.session_id].context.turn_processes

    started = time.monotonic()
    result, left = anyio.run(main)
    took = time.monotonic() - started
    print(f"\nunreachable: {result.reason} after {took:.2f}s")
    # Codex itself would print "Reconnecting... waiting for network" forever
    assert result.status == "failed" and result.reason == "provider-unavailable"
    assert took < 10 and left == []


@pytest.mark.cli
def test_dropped_stream_is_provider_failed(codex_bin, workspace, make_controller):
    step = Step(text="Hello there, this is cut", drop=True, times=None, match=Match(tools=None))
    with FakeModelServer([step]) as server:
        cfg = config(server.openai_base_url, codex_bin, max_retries=0)
        started = time.monotonic()
        result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
        took = time.monotonic() - started
    print(f"\ndropped stream: {result.reason} after {took:.2f}s")
    assert result.status == "failed" and result.reason == "provider-failed"


def fake_cli(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-codex"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if '--version' in sys.argv:\n"
        "    print('codex-cli 0.171.0'); sys.exit(0)\n" + textwrap.dedent(body)
    )
    path.chmod(0o755)
    return str(path)


def test_garbage_stream_is_provider_failed(tmp_path, workspace, make_controller):
    cli = fake_cli(tmp_path, "print('Traceback: secret provider text'); print('{')\n")
    cfg = {"cli_path": cli, "base_url": "http://127.0.0.1:9/v1"}
    result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
    assert result.status == "failed" and result.reason == "provider-failed"
    assert "secret provider text" not in repr(result.events)


def test_truncated_stream_is_provider_failed(tmp_path, workspace, make_controller):
    cli = fake_cli(
        tmp_path,
        'print(\'{"type":"thread.started","thread_id":"t-1"}\')\n'
        'print(\'{"type":"turn.started"}\')\n'
        'print(\'{"type":"item.completed","item":{"id":"i1","type":"agent_mess\', flush=True)\n',
    )
    cfg = {"cli_path": cli, "base_url": "http://127.0.0.1:9/v1"}
    result = anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi", timeout=30))
    assert result.status == "failed" and result.reason == "provider-failed"


def test_missing_cli_is_provider_unavailable(tmp_path, workspace, make_controller):
    cfg = {"cli_path": str(tmp_path / "nope"), "base_url": "http://127.0.0.1:9/v1"}
    with pytest.raises(HarnessError) as info:
        anyio.run(lambda: one_turn(make_controller, workspace, cfg, "hi"))
    assert info.value.reason == "provider-unavailable"


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
    assert not payloads[3].ok and "secret" not in repr(payloads)
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
