"""The ACP adapter against real ACP agents (Zed's Claude Code and Codex wrappers, Cline) and the
fake model server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from harness_acp.adapter import _Turn, classify_error, map_update
from harness_acp.registry import CLINE_LOCAL_ENDPOINTS
from harness_cli_kit.conformance import port_in_use
from harness_cli_kit.testing import (
    SECOND,
    CliUnderTest,
    assert_failed,
    assert_no_process,
    error_step,
    installed_cli,
    tool_script,
    unreachable_url,
)
from harness_hookspecs import HarnessError, MessageDelta, ToolCompleted, ToolStarted

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall, fixed_port_lock

#: Cline's lmstudio provider always dials http://localhost:1234/v1 (its ACP mode ignores
#: base_url), so its fake server must listen on exactly this port.
CLINE_PORT = 1234


def cline_port_free() -> None:
    if port_in_use(CLINE_PORT):
        pytest.skip(
            f"port {CLINE_PORT} on localhost is busy: cline's lmstudio provider can only reach a "
            f"model server there ({CLINE_LOCAL_ENDPOINTS['lmstudio']})"
        )


@contextmanager
def serve(agent: str, script: list[Step]) -> Iterator[FakeModelServer]:
    """A fake model server for ``agent`` (cline: on its fixed port, held against the other test
    processes meanwhile, or skip when something outside the tests holds it)."""
    if agent != "cline":
        with FakeModelServer(script) as server:
            yield server
        return
    installed_cli("cline")
    with fixed_port_lock(CLINE_PORT):
        cline_port_free()
        with FakeModelServer(script, port=CLINE_PORT) as server:
            yield server


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
    command = [installed_cli(binary)]
    if agent == "cline":
        command.append("--acp")
    else:
        config = {"base_url": server_url, **config}
    return env_var, {"command": command, **config, **extra}


def model_for(agent: str) -> str:
    # cline replaces a model id it does not know for lmstudio with its default: use that one
    return {"codex": "gpt-5", "cline": "openai/gpt-oss-20b"}.get(agent, "claude-sonnet-4-5")


def acp(agent: str, env_var: str, workspace: str, controller) -> CliUnderTest:
    """``acp:<agent>`` as a CLI under test (its config comes from :func:`setup`)."""

    def make(**kwargs):
        return controller(env_var, **kwargs)

    return CliUnderTest(f"acp:{agent}", model_for(agent), workspace, make, setup)


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_turn_tool_call_and_resume_in_new_controller(agent, workspace, controller):
    with serve(agent, tool_script(AGENTS[agent][2])) as server:
        env_var, config = setup(agent, url_for(agent, server))
        cli = acp(agent, env_var, workspace, controller)
        result, again = cli.turn_then_resume(config, 60)
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
        # leaving the controller detached the session: it killed the session-lifetime agent
        # and its whole group (and kept the session resumable)
        assert cli.session_leader is not None
        assert_no_process(cli.session_leader)
        assert again.status == "completed", again
        assert SECOND in again.text
        assert "create out.txt" in json.dumps(server.model_requests()[-1].body)


@pytest.mark.cli
@pytest.mark.parametrize("agent", ["claude-code", "cline"])
def test_strict_without_an_approver_rejects(agent, workspace, controller):
    tool = AGENTS[agent][2]
    script = [
        Step(text="Trying.", tool_calls=[tool]),
        Step(text="It was refused.", match=Match(tool_result=True)),
    ]
    with serve(agent, script) as server:
        env_var, config = setup(agent, url_for(agent, server))
        cli = acp(agent, env_var, workspace, controller)
        result, _ = cli.turn(config, "create out.txt", posture="strict")
    assert result.status == "completed", result
    assert not (Path(workspace) / "out.txt").exists()
    requested = [e.payload for e in result.events if e.type == "permission.requested"]
    resolved = [e.payload for e in result.events if e.type == "permission.resolved"]
    # the audit line names the command (bounded, one line)
    assert requested and "echo hello > out.txt" in requested[0].summary
    assert resolved[0].decision == "deny" and resolved[0].source == "policy"


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_cancel_mid_turn_then_next_turn_then_close_leaves_no_process(
    agent, workspace, controller, request
):
    if agent == "claude-code":
        # Known regression of stop 36, open: after the cancel, claude-code-acp's next turn
        # waits out its deadline (turn.failed timeout) in full-suite runs; passed once alone.
        # The cancel and the no-process checks below still run; only the next turn may fail.
        request.applymarker(
            pytest.mark.xfail(reason="acp:claude-code: next turn after a cancel times out")
        )
    script = [Step(text="late", delay=60), Step(text="after cancel", match=Match(contains="next"))]
    with serve(agent, script) as server:
        env_var, config = setup(agent, url_for(agent, server))

        async def main():
            async with controller(env_var, turn_timeout=60) as c:
                ref = await c.open_session(
                    harness=f"acp:{agent}",
                    workspace=workspace,
                    model=model_for(agent),
                    config=config,
                )
                context = c.live(ref.session_id).context
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
    assert_no_process(leader)
    assert after.status == "completed"  # the agent survived the cancel and took another turn


@pytest.mark.cli
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_401_is_authentication_required_fast(agent, workspace, controller):
    with serve(agent, [error_step(401)]) as server:
        env_var, config = setup(agent, url_for(agent, server))
        result, took = acp(agent, env_var, workspace, controller).turn(config)
    assert took < 30
    assert_failed(result, "authentication-required")


@pytest.mark.cli
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_unreachable_is_provider_unavailable_fast(agent, workspace, controller):
    if agent == "cline":  # its endpoint is fixed: unreachable = nothing on port 1234
        installed_cli("cline")
        cline_port_free()
        url = None
    else:
        url = unreachable_url("" if agent == "claude-code" else "/v1")
    env_var, config = setup(agent, url)
    result, took = acp(agent, env_var, workspace, controller).turn(config)
    assert took < 15
    assert_failed(result, "provider-unavailable")


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
def test_cline_401_is_mapped_from_the_message_fast(message, reason, workspace, controller):
    with serve("cline", [error_step(401, message)]) as server:
        env_var, config = setup("cline", None)
        result, took = acp("cline", env_var, workspace, controller).turn(config)
        assert [r.status for r in server.model_requests()] == [401]  # no retry of a 401
    assert took < 30
    assert_failed(result, reason)


@pytest.mark.cli
@pytest.mark.slow
def test_cline_without_preflight_reports_unreachable_itself(workspace, controller):
    """With the probe off, cline retries a refused connection for about a minute, then fails
    with "Cannot connect to API", which is still mapped to provider-unavailable."""
    installed_cli("cline")
    with fixed_port_lock(CLINE_PORT):  # nothing of another test process listens there meanwhile
        cline_port_free()
        env_var, config = setup("cline", None, preflight=False)
        result, took = acp("cline", env_var, workspace, controller).turn(config, timeout=120)
    assert took < 110
    assert_failed(result, "provider-unavailable")


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


def test_custom_agent_that_is_not_acp_fails_to_open(workspace, controller):
    garbage = [sys.executable, "-c", "print('Traceback: secret provider text')"]

    async def main():
        async with controller(turn_timeout=10) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(
                    harness="acp:custom", workspace=workspace, config={"command": garbage}
                )
            return info.value

    error = anyio.run(main)
    assert error.reason == "provider-failed"
    assert "secret" not in str(error)


def test_custom_needs_a_command(workspace, controller):
    async def main():
        async with controller() as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="acp:custom", workspace=workspace)
            return info.value.reason

    assert anyio.run(main) == "invalid-request"


def test_map_update_dedupes_tools_and_names_the_command():
    send, _ = anyio.create_memory_object_stream(10)
    turn = _Turn(send)
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
    # the start names the command (the audit line); the completion keeps the kind's summary
    assert out[0].name == "Bash" and out[0].summary == "Bash: rm -rf /secret"
    assert out[1].summary == "the tool call failed" and not out[1].ok


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


def test_the_adapter_speaks_the_sdks_protocol_version():
    from acp import PROTOCOL_VERSION
    from harness_acp.adapter import ACP_PROTOCOL_VERSION

    assert ACP_PROTOCOL_VERSION == PROTOCOL_VERSION


def test_registering_and_describing_the_adapters_does_not_import_the_sdk():
    # The SDK takes most of a second to import: only a spawned agent pays for it.
    code = (
        "import sys; from harness_acp.plugin import AcpAdapter; "
        "d = AcpAdapter('cline').describe(); "
        "print(d.details['protocol'], 'acp' in sys.modules, 'pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["ACP", "v1", "False", "False"], done.stderr[-500:]


ASKING_AGENTS = ["claude-code", "cline"]  # codex-acp asks only for an escalation (read-only)


def _approval(agent, workspace, controller, handler, call=None, **kwargs):
    from harness_cli_kit.approval_testing import approval_turn

    env_var = AGENTS[agent][1]
    cli = acp(agent, env_var, workspace, controller)
    touch = call or TOUCH[agent]
    return approval_turn(
        cli,
        touch,
        handler,
        serve=lambda script: serve(agent, script),
        config=lambda server: setup(agent, url_for(agent, server))[1],
        **kwargs,
    )


TOUCH = {
    "claude-code": ToolCall("Bash", {"command": "touch approved.txt", "description": "touch"}),
    "cline": ToolCall("run_commands", {"commands": ["touch approved.txt"]}),
}


@pytest.mark.cli
@pytest.mark.parametrize("agent", ASKING_AGENTS)
@pytest.mark.parametrize("answer", ["allow", "deny", "timeout"])
def test_the_host_answers_the_agents_permission_request(agent, answer, workspace, controller):
    from harness_cli_kit.approval_testing import assert_one_terminal, permission_events
    from harness_hookspecs import PermissionDecision

    async def handler(request):
        if answer == "timeout":
            await anyio.sleep(3600)
        return PermissionDecision.allow() if answer == "allow" else PermissionDecision.deny("no")

    result, seconds = _approval(agent, workspace, controller, handler, permission_timeout=3)
    written = (Path(workspace) / "approved.txt").exists()
    assert written == (answer == "allow"), [(e.type, e.payload) for e in result.events]
    requested, resolved = permission_events(result)
    assert requested and resolved
    source = {"allow": "host", "deny": "host", "timeout": "timeout"}[answer]
    decision = "allow" if answer == "allow" else "deny"
    assert (resolved[0].decision, resolved[0].source) == (decision, source)
    assert_one_terminal(result)
    if answer == "timeout":
        assert seconds < 50


def test_the_transport_skips_a_line_nested_past_the_interpreters_depth():
    # such a line raised RecursionError out of the SDK's receive loop: an internal error (70)
    from harness_acp.adapter import ProcessTransport

    class Lines:
        async def lines(self):
            yield b"[" * 50_000 + b"]" * 50_000
            yield b"agent log line"
            yield b'{"jsonrpc": "2.0", "id": 0, "result": {}}'

    transport = ProcessTransport(Lines())
    assert anyio.run(transport.receive) == {"jsonrpc": "2.0", "id": 0, "result": {}}
