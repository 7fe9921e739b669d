"""The ACP adapter against real ACP agents (Zed's Claude Code and Codex wrappers, Cline) and the
fake model server."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_acp.adapter import _Turn, classify_error, map_update
from harness_acp.conformance import port_in_use
from harness_acp.registry import CLINE_LOCAL_ENDPOINTS
from harness_hookspecs import HarnessError, MessageDelta, ToolCompleted, ToolStarted

from harness_core.testing.clis import NPM_BIN
from harness_core.testing.fake_model import (
    ErrorReply,
    FakeModelServer,
    Match,
    Step,
    ToolCall,
    Usage,
)
from harness_core.testing.processes import alive, wait_gone

#: Cline's lmstudio provider always dials http://localhost:1234/v1 (its ACP mode ignores
#: base_url), so its fake server must listen on exactly this port.
CLINE_PORT = 1234


def agent_bin(name: str) -> str:
    path = NPM_BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    return str(path)


def cline_port_free() -> None:
    if port_in_use(CLINE_PORT):
        pytest.skip(
            f"port {CLINE_PORT} on localhost is busy: cline's lmstudio provider can only reach a "
            f"model server there ({CLINE_LOCAL_ENDPOINTS['lmstudio']})"
        )


def serve(agent: str, script: list[Step]) -> FakeModelServer:
    """A fake model server for ``agent`` (cline: on its fixed port, or skip)."""
    if agent != "cline":
        return FakeModelServer(script)
    agent_bin("cline")
    cline_port_free()
    return FakeModelServer(script, port=CLINE_PORT)


# agent -> (binary, credential variable, tool call that writes out.txt, extra config)
AGENTS = {
    "claude-code": (
        "claude-code-acp",
        "ANTHROPIC_API_KEY",
        ToolCall("Bash", {"command": "echo hello > out.txt", "description": "write"}),
        {},
    ),
    "codex": (
        "codex-acp",
        "OPENAI_API_KEY",
        ToolCall("exec_command", {"cmd": "echo hello > out.txt"}),
        # "auto" sandboxes commands with bwrap + codex-linux-sandbox, which codex-acp cannot find
        # when CODEX_HOME is under /tmp (it refuses to create its helper links there)
        {"mode": "full-access"},
    ),
    # cline's tools (from the request it sends): read_files, search_codebase, run_commands,
    # fetch_web_content, apply_patch, spawn_agent
    "cline": (
        "cline",
        "CLINE_API_KEY",
        ToolCall("run_commands", {"commands": ["echo hello > out.txt"]}),
        {"provider": "lmstudio"},
    ),
}


def url_for(agent: str, server: FakeModelServer) -> str:
    return server.base_url if agent == "claude-code" else server.openai_base_url


def setup(agent: str, server_url: str | None, **extra):
    binary, env_var, _, config = AGENTS[agent]
    command = [agent_bin(binary)]
    if agent == "cline":
        command.append("--acp")
    else:
        config = {"base_url": server_url, **config}
    return env_var, {"command": command, **config, **extra}


def model_for(agent: str) -> str:
    # cline replaces a model id it does not know for lmstudio with its default: use that one
    return {"codex": "gpt-5", "cline": "openai/gpt-oss-20b"}.get(agent, "claude-sonnet-4-5")


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_turn_tool_call_and_resume_in_new_controller(agent, workspace, make_controller):
    tool = AGENTS[agent][2]
    script = [
        Step(text="Creating it.", tool_calls=[tool], usage=Usage(100, 20)),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]
    with serve(agent, script) as server:
        env_var, config = setup(agent, url_for(agent, server), permissions="allow")

        async def first():
            async with make_controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness=f"acp:{agent}",
                    workspace=workspace,
                    model=model_for(agent),
                    config=config,
                )
                result = await c.run_turn(ref, "create out.txt")
                context = c._live[ref.session_id].context
                leader = context.session_processes[0].pid
            # leaving the controller detaches the session (kills the agent, keeps it resumable)
            return ref, result, leader

        ref, result, leader = anyio.run(first)
        assert result.status == "completed", result
        assert (Path(workspace) / "out.txt").exists(), [(e.type, e.payload) for e in result.events]
        assert (Path(workspace) / "out.txt").read_text() == "hello\n"
        assert result.text.endswith("Created out.txt.")
        types = [e.type for e in result.events]
        assert types.index("tool.started") < types.index("tool.completed")
        assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
        done = [e.payload for e in result.events if e.type == "tool.completed"]
        assert done[0].ok
        if agent in ("claude-code", "cline"):  # both ask before running a command
            resolved = [e.payload for e in result.events if e.type == "permission.resolved"]
            assert resolved and resolved[0].decision == "allow"
        if agent == "cline":
            offered = server.model_requests()[0].tool_names
            assert "run_commands" in offered and "apply_patch" in offered, offered
            # cline 3.0.65 answers session/prompt with a stopReason only: no usage to report
            assert "usage.reported" not in types
        # detaching killed the session-lifetime agent and its whole group
        assert wait_gone(leader) == [] and not alive(leader)

        async def second():
            async with make_controller(env_var, turn_timeout=60) as c:
                await c.resume_session(
                    ref, workspace=workspace, model=model_for(agent), config=config
                )
                return await c.run_turn(ref, "say it again")

        result = anyio.run(second)
        assert result.status == "completed", result
        assert "Second turn reply." in result.text
        assert "create out.txt" in json.dumps(server.model_requests()[-1].body)


@pytest.mark.cli
@pytest.mark.parametrize("agent", ["claude-code", "cline"])
def test_permission_is_rejected_by_default(agent, workspace, make_controller):
    tool = AGENTS[agent][2]
    script = [
        Step(text="Trying.", tool_calls=[tool]),
        Step(text="It was refused.", match=Match(tool_result=True)),
    ]
    with serve(agent, script) as server:
        env_var, config = setup(agent, url_for(agent, server))

        async def main():
            async with make_controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness=f"acp:{agent}",
                    workspace=workspace,
                    model=model_for(agent),
                    config=config,
                )
                return await c.run_turn(ref, "create out.txt")

        result = anyio.run(main)
    assert result.status == "completed", result
    assert not (Path(workspace) / "out.txt").exists()
    requested = [e.payload for e in result.events if e.type == "permission.requested"]
    resolved = [e.payload for e in result.events if e.type == "permission.resolved"]
    assert requested and requested[0].summary.startswith("the agent asks to")
    assert resolved[0].decision == "deny" and resolved[0].source == "policy"
    assert "echo hello" not in repr(result.events)


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_cancel_mid_turn_then_next_turn_then_close_leaves_no_process(
    agent, workspace, make_controller
):
    script = [Step(text="late", delay=60), Step(text="after cancel", match=Match(contains="next"))]
    with serve(agent, script) as server:
        env_var, config = setup(agent, url_for(agent, server))

        async def main():
            async with make_controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness=f"acp:{agent}",
                    workspace=workspace,
                    model=model_for(agent),
                    config=config,
                )
                context = c._live[ref.session_id].context
                leader = context.session_processes[0].pid
                stamp: list[float] = []

                async def canceller(turn_id: str) -> None:
                    with anyio.fail_after(30):
                        while not server.model_requests():
                            await anyio.sleep(0.1)
                    stamp.append(time.monotonic())
                    await c.cancel_turn(ref, turn_id)

                async with c.turn(ref, "hang please") as turn, anyio.create_task_group() as tg:
                    tg.start_soon(canceller, turn.turn_id)
                    events = [e async for e in turn]
                started = stamp[0]
                took = time.monotonic() - started
                after = await c.run_turn(ref, "next turn")
                await c.close_session(ref)
                return events[-1], took, after, leader

        last, took, after, leader = anyio.run(main)
    assert last.type == "turn.cancelled"
    assert took < 5
    assert after.status == "completed"  # the agent survived the cancel and took another turn
    assert wait_gone(leader) == [] and not alive(leader)


@pytest.mark.cli
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_401_is_authentication_required_fast(agent, workspace, make_controller):
    error = Step(error=ErrorReply(401, "secret upstream text"), times=None, match=Match(tools=None))
    with serve(agent, [error]) as server:
        env_var, config = setup(agent, url_for(agent, server))

        async def main():
            async with make_controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness=f"acp:{agent}",
                    workspace=workspace,
                    model=model_for(agent),
                    config=config,
                )
                return await c.run_turn(ref, "hi")

        started = time.monotonic()
        result = anyio.run(main)
    assert time.monotonic() - started < 30
    assert result.status == "failed" and result.reason == "authentication-required", result
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_unreachable_is_provider_unavailable_fast(agent, workspace, make_controller):
    if agent == "cline":  # its endpoint is fixed: unreachable = nothing on port 1234
        agent_bin("cline")
        cline_port_free()
        url = None
    else:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        url = f"http://127.0.0.1:{port}" + ("" if agent == "claude-code" else "/v1")
    env_var, config = setup(agent, url)

    async def main():
        async with make_controller(env_var, turn_timeout=60) as c:
            ref = await c.open_session(
                harness=f"acp:{agent}", workspace=workspace, model=model_for(agent), config=config
            )
            return await c.run_turn(ref, "hi")

    started = time.monotonic()
    result = anyio.run(main)
    assert time.monotonic() - started < 15
    assert result.status == "failed" and result.reason == "provider-unavailable"


@pytest.mark.cli
@pytest.mark.parametrize(
    ("message", "reason"),
    [
        # what OpenAI-compatible servers say on a bad key: recognised
        (
            "Incorrect API key provided: lm-st****-123. secret upstream text",
            "authentication-required",
        ),
        # cline forwards only the upstream message, never the HTTP status: an opaque 401 body
        # cannot be told apart from any other failure (measured limit, cline 3.0.65)
        ("secret upstream text", "provider-failed"),
    ],
)
def test_cline_401_is_mapped_from_the_message_fast(message, reason, workspace, make_controller):
    error = Step(error=ErrorReply(401, message), times=None, match=Match(tools=None))
    with serve("cline", [error]) as server:
        env_var, config = setup("cline", None)

        async def main():
            async with make_controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness="acp:cline",
                    workspace=workspace,
                    model=model_for("cline"),
                    config=config,
                )
                return await c.run_turn(ref, "hi")

        started = time.monotonic()
        result = anyio.run(main)
        assert [r.status for r in server.model_requests()] == [401]  # no retry of a 401
    assert time.monotonic() - started < 30
    assert result.status == "failed" and result.reason == reason, result
    assert "secret upstream text" not in repr(result.events)


@pytest.mark.cli
@pytest.mark.slow
def test_cline_without_preflight_reports_unreachable_itself(workspace, make_controller):
    """With the probe off, cline retries a refused connection for about a minute, then fails
    with "Cannot connect to API", which is still mapped to provider-unavailable."""
    agent_bin("cline")
    cline_port_free()
    env_var, config = setup("cline", None, preflight=False)

    async def main():
        async with make_controller(env_var, turn_timeout=120) as c:
            ref = await c.open_session(
                harness="acp:cline", workspace=workspace, model=model_for("cline"), config=config
            )
            return await c.run_turn(ref, "hi")

    started = time.monotonic()
    result = anyio.run(main)
    assert time.monotonic() - started < 110
    assert result.status == "failed" and result.reason == "provider-unavailable", result


@pytest.mark.parametrize(
    ("config", "ok"),
    [
        ({"provider": "lmstudio"}, True),
        ({"provider": "lmstudio", "base_url": "http://127.0.0.1:1234/v1"}, True),
        ({"provider": "lmstudio", "base_url": "http://127.0.0.1:8080/v1"}, False),
        ({"provider": "anthropic", "base_url": "http://127.0.0.1:8080"}, False),
        ({"provider": "anthropic"}, True),
        ({"provider": ""}, False),
    ],
)
def test_cline_registry_routes(tmp_path, config, ok):
    from types import SimpleNamespace

    from harness_acp.registry import cline

    secrets: list[str] = []
    context = SimpleNamespace(
        config={**config, "api_key": "lm-key-1234"},
        env={},
        model="openai/gpt-oss-20b",
        add_secret=secrets.append,
    )
    if not ok:
        with pytest.raises(HarnessError) as info:
            cline(context, tmp_path)
        assert info.value.reason == "invalid-request"
        return
    launch = cline(context, tmp_path)
    assert launch.argv == ["cline", "--acp"]
    assert launch.env["CLINE_PROVIDER"] == config["provider"]
    assert launch.env["CLINE_API_KEY"] == "lm-key-1234" and secrets == ["lm-key-1234"]
    assert launch.env["CLINE_MODEL"] == "openai/gpt-oss-20b"
    assert launch.env["CLINE_SESSION_BACKEND_MODE"] == "local"  # no hub daemon
    assert launch.env["HOME"] == str(tmp_path)
    # the local route probes Cline's fixed endpoint; a vendor is not probed
    expected = CLINE_LOCAL_ENDPOINTS["lmstudio"] if config["provider"] == "lmstudio" else None
    assert launch.base_url == expected


def test_custom_agent_that_is_not_acp_fails_to_open(workspace, make_controller):
    garbage = [sys.executable, "-c", "print('Traceback: secret provider text')"]

    async def main():
        async with make_controller(turn_timeout=10) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(
                    harness="acp:custom", workspace=workspace, config={"command": garbage}
                )
            return info.value

    error = anyio.run(main)
    assert error.reason == "provider-failed"
    assert "secret" not in str(error)


def test_custom_needs_a_command(workspace, make_controller):
    async def main():
        async with make_controller() as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="acp:custom", workspace=workspace)
            return info.value.reason

    assert anyio.run(main) == "invalid-request"


def test_map_update_dedupes_tools_and_hides_arguments():
    send, _ = anyio.create_memory_object_stream(10)
    turn = _Turn(send, "reject")
    pending = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "kind": "execute",
        "title": "`rm -rf /secret`",
        "rawInput": {"command": "rm -rf /secret"},
        "_meta": {"claudeCode": {"toolName": "Bash"}},
        "status": "pending",
    }
    out = map_update(turn, pending) + map_update(turn, pending)
    out += map_update(
        turn, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"}
    )
    out += map_update(
        turn, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}}
    )
    out += map_update(
        turn, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}
    )
    assert [type(p) for p in out] == [ToolStarted, ToolCompleted, MessageDelta]
    assert out[0].name == "Bash" and out[0].summary == "ran a command" and not out[1].ok
    assert "secret" not in repr(out)


def test_classify_error():
    from acp import RequestError

    assert (
        classify_error(RequestError(-32000, "Authentication required")) == "authentication-required"
    )
    assert classify_error(
        RequestError(-32603, "Internal error", {"message": "API Error: 401"})
    ) == ("authentication-required")
    assert classify_error(RequestError(-32603, "Cannot connect to API")) == "provider-unavailable"
    assert classify_error(RequestError(-32603, "boom")) == "provider-failed"
    assert classify_error(ConnectionError()) == "provider-failed"
