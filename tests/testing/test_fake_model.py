"""The scripted fake model server, over real HTTP, and the real harness CLIs against it.

The server tests use only urllib (no client library shares code with the server). The CLI smoke
tests run the binaries pinned in tools/npm (installed by .ci/install-clis.sh) and skip, with the
reason, when a binary is not installed.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from harness_core.testing.clis import NPM_BIN

pytest.importorskip("harness_fake_model", reason="the fake model is harnessplane-fake-model")

from harness_core.testing.fake_model import (
    ErrorReply,
    FakeModelServer,
    Match,
    Step,
    ToolCall,
    Usage,
    load_script,
    main,
)

ROOT = Path(__file__).resolve().parents[2]

TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
RESP_TOOLS = [{"type": "function", "name": "exec_command", "parameters": {}}]


# ------------------------------------------------------------------------------------ helpers


def post(
    server: FakeModelServer, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    """Parse an SSE body into (event, data) pairs; data is JSON or the raw string."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        event, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        payload = "\n".join(data)
        try:
            out.append((event, json.loads(payload)))
        except ValueError:
            out.append((event, payload))
    return out


def anthropic_body(text: str = "hello", stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        **extra,
    }


@pytest.fixture
def server():
    with FakeModelServer() as srv:
        yield srv


# ---------------------------------------------------------------------------- Anthropic Messages


def test_anthropic_stream_exact_event_sequence(server):
    server.set_script(
        [
            Step(
                text="Hello there",
                tool_calls=[ToolCall("Bash", {"command": "ls"}, id="toolu_1")],
                usage=Usage(input_tokens=11, output_tokens=7),
            )
        ]
    )
    status, headers, raw = post(server, "/v1/messages?beta=true", anthropic_body())
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    events = sse(raw)
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(e == d["type"] for e, d in events)
    start = events[0][1]["message"]
    assert start["role"] == "assistant" and start["content"] == []
    assert start["usage"]["input_tokens"] == 11
    blocks = [d for e, d in events if e == "content_block_start"]
    assert [b["content_block"]["type"] for b in blocks] == ["text", "tool_use"]
    assert blocks[1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Bash",
        "input": {},
    }
    text = "".join(
        d["delta"]["text"] for e, d in events if e == "content_block_delta" and d["index"] == 0
    )
    args = "".join(
        d["delta"]["partial_json"]
        for e, d in events
        if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    )
    assert text == "Hello there" and json.loads(args) == {"command": "ls"}
    assert [d["index"] for e, d in events if e == "content_block_stop"] == [0, 1]
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 7


def test_anthropic_non_streaming(server):
    server.set_script([Step(text="Hi", tool_calls=[ToolCall("Write", {"file_path": "a"})])])
    status, _, raw = post(server, "/v1/messages", anthropic_body(stream=False))
    msg = json.loads(raw)
    assert status == 200 and msg["type"] == "message" and msg["stop_reason"] == "tool_use"
    assert msg["content"][0] == {"type": "text", "text": "Hi"}
    assert msg["content"][1]["type"] == "tool_use" and msg["content"][1]["input"] == {
        "file_path": "a"
    }
    status, _, raw = post(server, "/v1/messages", anthropic_body(stream=False))
    assert json.loads(raw)["stop_reason"] == "end_turn"


def test_count_tokens_and_models_do_not_consume_steps(server):
    server.set_script([Step(text="scripted")])
    status, _, raw = post(server, "/v1/messages/count_tokens", anthropic_body())
    assert status == 200 and json.loads(raw)["input_tokens"] > 0
    with urllib.request.urlopen(server.base_url + "/v1/models", timeout=5) as resp:
        models = json.load(resp)
    assert models["object"] == "list" and models["data"][0]["id"]
    assert server.steps_remaining == 1


# ------------------------------------------------------------------------------- OpenAI Responses


def test_responses_stream_text_and_function_call(server):
    server.set_script(
        [
            Step(
                text="Running it",
                tool_calls=[ToolCall("exec_command", {"cmd": "echo hi"}, id="call_1")],
                usage=Usage(input_tokens=20, output_tokens=5, cache_read_input_tokens=4),
            )
        ]
    )
    body = {"model": "gpt-test", "stream": True, "tools": RESP_TOOLS, "input": "do it"}
    status, _, raw = post(server, "/v1/responses", body)
    assert status == 200
    events = sse(raw)
    types = [d["type"] for _, d in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    assert "response.output_text.delta" in types
    text = "".join(d["delta"] for _, d in events if d["type"] == "response.output_text.delta")
    assert text == "Running it"
    done = [d["item"] for _, d in events if d["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "function_call"]
    call = done[1]
    assert call["name"] == "exec_command" and call["call_id"] == "call_1"
    assert json.loads(call["arguments"]) == {"cmd": "echo hi"}
    deltas = "".join(
        d["delta"] for _, d in events if d["type"] == "response.function_call_arguments.delta"
    )
    assert json.loads(deltas) == {"cmd": "echo hi"}
    usage = events[-1][1]["response"]["usage"]
    assert usage["input_tokens"] == 24 and usage["input_tokens_details"]["cached_tokens"] == 4
    assert usage["output_tokens"] == 5 and usage["total_tokens"] == 29


def test_responses_custom_tool_and_non_streaming(server):
    server.set_script(
        [
            Step(tool_calls=[ToolCall("apply_patch", "*** Begin Patch\n*** End Patch")]),
            Step(text="x"),
        ]
    )
    tools = [*RESP_TOOLS, {"type": "custom", "name": "apply_patch"}]
    body = {
        "model": "m",
        "stream": True,
        "tools": tools,
        "input": [{"role": "user", "content": "p"}],
    }
    events = sse(post(server, "/v1/responses", body)[2])
    done = [d["item"] for _, d in events if d["type"] == "response.output_item.done"]
    assert done[0]["type"] == "custom_tool_call" and done[0]["input"].startswith("*** Begin")
    status, _, raw = post(server, "/v1/responses", dict(body, stream=False))
    resp = json.loads(raw)
    assert status == 200 and resp["status"] == "completed" and resp["output_text"] == "x"
    assert resp["output"][0]["content"][0] == {
        "type": "output_text",
        "text": "x",
        "annotations": [],
    }


# ------------------------------------------------------------------------------- Chat Completions


def test_chat_stream_tool_calls_usage_and_done(server):
    server.set_script(
        [
            Step(
                text="ok",
                tool_calls=[ToolCall("bash", {"command": "ls"}, id="call_9")],
                usage=Usage(3, 2),
            )
        ]
    )
    body = {
        "model": "m",
        "stream": True,
        "tools": OPENAI_TOOLS,
        "messages": [{"role": "user", "content": "hi"}],
    }
    events = sse(post(server, "/v1/chat/completions", body)[2])
    assert events[-1] == (None, "[DONE]")
    chunks = [d for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert content == "ok"
    calls = [
        tc for c in chunks if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert calls[0]["id"] == "call_9" and calls[0]["function"]["name"] == "bash"
    args = "".join(tc["function"].get("arguments", "") for tc in calls)
    assert json.loads(args) == {"command": "ls"}
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 5


def test_chat_non_streaming(server):
    server.set_script([Step(tool_calls=[ToolCall("bash", {"command": "ls"})])])
    body = {"model": "m", "tools": OPENAI_TOOLS, "messages": [{"role": "user", "content": "hi"}]}
    resp = json.loads(post(server, "/v1/chat/completions", body)[2])
    choice = resp["choices"][0]
    assert resp["object"] == "chat.completion" and choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "ls"
    }
    assert resp["usage"]["prompt_tokens"] > 0


# ------------------------------------------------------------------------ errors, delay and drop


@pytest.mark.parametrize(
    ("path", "status", "check"),
    [
        ("/v1/messages", 401, lambda b: b["error"]["type"] == "authentication_error"),
        ("/v1/messages", 429, lambda b: b["error"]["type"] == "rate_limit_error"),
        ("/v1/messages", 500, lambda b: b["type"] == "error" and b["error"]["type"] == "api_error"),
        ("/v1/responses", 401, lambda b: b["error"]["code"] == "invalid_api_key"),
        ("/v1/chat/completions", 429, lambda b: b["error"]["code"] == "rate_limit_exceeded"),
        ("/v1/chat/completions", 500, lambda b: b["error"]["type"] == "server_error"),
    ],
)
def test_errors_in_vendor_shape(server, path, status, check):
    server.set_script([Step(error=ErrorReply(status, "nope", retry_after=1))])
    body = anthropic_body() if path == "/v1/messages" else {"model": "m", "tools": OPENAI_TOOLS}
    got, headers, raw = post(server, path, body)
    data = json.loads(raw)
    assert got == status and check(data)
    assert "nope" in json.dumps(data) and headers["retry-after"] == "1"
    assert server.requests[-1].status == status


def test_error_forever_and_step_times(server):
    server.set_script([Step(error=ErrorReply(401), times=None)])
    for _ in range(3):
        assert post(server, "/v1/messages", anthropic_body())[0] == 401
    server.set_script([Step(text="a", times=2), Step(text="b")])
    texts = [
        json.loads(post(server, "/v1/messages", anthropic_body(stream=False))[2])["content"][0][
            "text"
        ]
        for _ in range(4)
    ]
    assert texts == ["a", "a", "b", "OK."]


def test_delay(server):
    server.set_script([Step(text="late", delay=0.5)])
    t = time.monotonic()
    post(server, "/v1/messages", anthropic_body())
    assert time.monotonic() - t >= 0.5


def test_drop_mid_stream(server):
    server.set_script([Step(text="a long partial answer", drop=True)])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request(
        "POST", "/v1/messages", json.dumps(anthropic_body()), {"content-type": "application/json"}
    )
    resp = conn.getresponse()
    assert resp.status == 200
    with pytest.raises(http.client.IncompleteRead) as info:
        resp.read()
    partial = info.value.partial.decode()
    assert "message_start" in partial and "text_delta" in partial
    assert "message_stop" not in partial
    # The server is still fine afterwards.
    assert post(server, "/v1/messages", anthropic_body())[0] == 200


def test_drop_non_streaming(server):
    server.set_script([Step(text="never sent", drop=True)])
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, urllib.error.URLError)):
        post(server, "/v1/chat/completions", {"model": "m", "tools": OPENAI_TOOLS})


# ----------------------------------------------------------------------- matching and recording


def test_side_requests_get_default_and_do_not_consume(server):
    server.set_script(
        [
            Step(text="first", match=Match(contains="build")),
            Step(text="after tool", match=Match(tool_result=True)),
        ],
        default_text="side",
    )

    def reply(body: dict[str, Any]) -> str:
        return json.loads(post(server, "/v1/messages", dict(body, stream=False))[2])["content"][0][
            "text"
        ]

    title = anthropic_body("write a title")
    title.pop("tools")
    assert reply(title) == "side"  # no tools offered: a side request
    assert reply(anthropic_body("unrelated")) == "side"  # next step wants "build"
    assert reply(anthropic_body("please build it")) == "first"
    tool_result = anthropic_body()
    tool_result["messages"].append(
        {"role": "assistant", "content": [{"type": "text", "text": "."}]}
    )
    tool_result["messages"].append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
    )
    assert reply(anthropic_body("no result yet")) == "side"
    assert reply(tool_result) == "after tool"
    assert reply(anthropic_body()) == "side"  # exhausted
    assert [r.step_index for r in server.requests] == [None, None, 0, None, 1, None]
    assert (
        server.requests[4].has_tool_result
        and server.requests[2].last_user_text == "please build it"
    )


def test_endpoint_match_and_responder(server):
    seen = []

    def responder(req):
        seen.append(req.endpoint)
        return Step(text=f"dynamic {req.model}") if req.endpoint == "chat" else None

    server.set_script([Step(text="resp only", match=Match(endpoint="responses")), responder])
    chat = {"model": "m1", "tools": OPENAI_TOOLS, "messages": [{"role": "user", "content": "x"}]}
    assert json.loads(post(server, "/v1/chat/completions", chat)[2])["choices"][0]["message"][
        "content"
    ] == ("OK.")
    resp = {"model": "m", "tools": RESP_TOOLS, "input": "x"}
    assert json.loads(post(server, "/v1/responses", resp)[2])["output_text"] == "resp only"
    assert json.loads(post(server, "/v1/chat/completions", chat)[2])["choices"][0]["message"][
        "content"
    ] == ("dynamic m1")
    assert seen == ["chat"]


def test_recording_redacts_credentials(server):
    post(
        server,
        "/v1/messages",
        anthropic_body("hi"),
        {"x-api-key": "sk-secret", "authorization": "Bearer sk-secret", "anthropic-version": "1"},
    )
    (rec,) = server.requests
    assert rec.method == "POST" and rec.path == "/v1/messages" and rec.endpoint == "messages"
    assert rec.headers["x-api-key"] == "<redacted>" and rec.headers["authorization"] == "<redacted>"
    assert rec.headers["anthropic-version"] == "1"
    assert rec.body["messages"][0]["content"][0]["text"] == "hi"
    assert rec.tool_names == ["Bash"] and rec.stream is True
    assert "sk-secret" not in json.dumps(rec.to_dict())
    assert server.model_requests("messages") == [rec]
    assert len(server.wait_for_requests(1, timeout=1)) == 1
    with pytest.raises(TimeoutError):
        server.wait_for_requests(2, timeout=0.2)


def test_unknown_route_is_recorded_404(server):
    status, _, _ = post(server, "/v1/unknown", {})
    assert status == 404 and server.requests[0].status == 404


def test_json_script_file(tmp_path):
    script = {
        "default_text": "dflt",
        "steps": [
            {
                "text": "t",
                "tool_calls": [{"name": "shell", "arguments": {"command": ["ls"]}}],
                "usage": {"input_tokens": 1, "output_tokens": 2},
            },
            {"error": 429, "match": "any"},
            {"error": {"status": 500, "message": "boom"}, "delay": 0.1, "drop": False},
        ],
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    steps, default = load_script(path)
    assert default == "dflt" and steps[0].tool_calls[0].name == "shell"
    assert steps[1].error.status == 429 and steps[1].match.tools is None
    with FakeModelServer(path) as srv:
        body = {"model": "m", "tools": OPENAI_TOOLS, "messages": []}
        assert post(srv, "/v1/chat/completions", body)[0] == 200
        assert post(srv, "/chat/completions", {"model": "m"})[0] == 429  # no /v1, no tools
        assert post(srv, "/v1/chat/completions", body)[0] == 500
    with pytest.raises(ValueError):
        load_script([{"txt": "typo"}])


def test_works_inside_asyncio_and_trio_hosts():
    async def use() -> int:
        with FakeModelServer([Step(text="x")]) as srv:
            loop_free = await asyncio.to_thread(post, srv, "/v1/messages", anthropic_body())
            return loop_free[0]

    assert asyncio.run(use()) == 200
    trio = pytest.importorskip("trio")

    async def use_trio() -> int:
        with FakeModelServer([Step(text="x")]) as srv:
            return (await trio.to_thread.run_sync(post, srv, "/v1/messages", anthropic_body()))[0]

    assert trio.run(use_trio) == 200


def test_main_serves_script(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "from file", "match": "any"}]))
    record = tmp_path / "rec.jsonl"
    rec_args = ["--record", str(record)]
    code = (
        "import sys; from harness_core.testing.fake_model import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", "0", "--script", str(script), *rec_args],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split()[-1]
        req = urllib.request.Request(
            url + "/v1/chat/completions",
            data=json.dumps({"model": "m", "messages": []}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.load(resp)["choices"][0]["message"]["content"] == "from file"
        assert json.loads(record.read_text().splitlines()[0])["endpoint"] == "chat"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    assert callable(main)


# ------------------------------------------------------------------------------- real CLI smoke


def _bin(name: str) -> str:
    path = NPM_BIN / name
    if not path.exists():
        pytest.skip(
            f"{name} is not installed in {NPM_BIN} (run .ci/install-clis.sh); "
            "the real-CLI smoke test cannot run"
        )
    return str(path)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> list[dict]:
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    events = []
    for line in proc.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return events


def _script(tool: str, args: dict[str, Any]) -> list[Step]:
    return [
        Step(text="Creating it.", tool_calls=[ToolCall(tool, args)], usage=Usage(100, 20)),
        Step(text="Created out.txt.", match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text="Second turn reply.", match=Match(contains="again")),
    ]


def _base_env(home: Path, ws: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_"))
    }
    env.update(HOME=str(home), PWD=str(ws))  # Bun-built CLIs take their cwd from $PWD
    return env


@pytest.fixture
def dirs(tmp_path):
    ws, home = tmp_path / "workspace", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    return ws, home


def test_claude_code_turn_tool_call_and_resume(dirs):
    claude = _bin("claude")
    ws, home = dirs
    with FakeModelServer(_script("Bash", {"command": "echo hello > out.txt"})) as srv:
        env = _base_env(home, ws)
        env.update(
            ANTHROPIC_BASE_URL=srv.base_url,
            ANTHROPIC_API_KEY="sk-ant-fake",
            CLAUDE_CONFIG_DIR=str(home / ".claude"),
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CODE_MAX_RETRIES="0",
        )
        common = ["--output-format", "stream-json", "--verbose", "--allowedTools", "Bash,Write"]
        events = _run([claude, "-p", "create out.txt", *common], ws, env)
        assert (ws / "out.txt").read_text() == "hello\n"
        result = events[-1]
        assert result["type"] == "result" and not result["is_error"]
        assert result["result"] == "Created out.txt." and result["usage"]["output_tokens"] == 30
        events = _run(
            [claude, "-p", "say it again", "--resume", result["session_id"], *common], ws, env
        )
        assert events[-1]["result"] == "Second turn reply."
        assert events[-1]["session_id"] == result["session_id"]
        assert [r.step_index for r in srv.model_requests()] == [0, 1, 2]


def test_codex_turn_tool_call_and_resume(dirs):
    codex = _bin("codex")
    ws, home = dirs
    with FakeModelServer(_script("exec_command", {"cmd": "echo hello > out.txt"})) as srv:
        (home / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\n'
            "[model_providers.fake]\n"
            f'name = "Fake"\nbase_url = "{srv.openai_base_url}"\nwire_api = "responses"\n'
            'env_key = "FAKE_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        env = _base_env(home, ws)
        env.update(CODEX_HOME=str(home), FAKE_API_KEY="sk-fake")
        # With bwrap installed, workspace-write runs tools via codex-linux-sandbox, which Codex
        # refuses to set up when CODEX_HOME is under /tmp (as here); the test sandbox is tmp_path.
        flags = ["--json", "--skip-git-repo-check", "-s", "danger-full-access"]
        events = _run([codex, "exec", *flags, "create out.txt"], ws, env)
        assert (ws / "out.txt").read_text() == "hello\n"
        thread = next(e["thread_id"] for e in events if e["type"] == "thread.started")
        cmd = [e for e in events if e.get("item", {}).get("type") == "command_execution"]
        assert cmd[-1]["item"]["exit_code"] == 0
        assert events[-1]["type"] == "turn.completed" and events[-1]["usage"]["output_tokens"] == 30
        events = _run([codex, "exec", *flags, "resume", thread, "say it again"], ws, env)
        texts = [
            e["item"]["text"] for e in events if e.get("item", {}).get("type") == "agent_message"
        ]
        assert texts == ["Second turn reply."]
        assert [r.step_index for r in srv.model_requests()] == [0, 1, 2]


def test_opencode_turn_tool_call_and_resume(dirs):
    opencode = _bin("opencode")
    ws, home = dirs
    with FakeModelServer(
        _script("bash", {"command": "echo hello > out.txt", "description": "w"})
    ) as srv:
        config = {
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": srv.openai_base_url, "apiKey": "sk-fake"},
                    "models": {"fake-model": {"name": "Fake"}},
                }
            },
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"edit": "allow", "bash": "allow"},
        }
        (home / "opencode.json").write_text(json.dumps(config))
        env = _base_env(home, ws)
        env.update(
            OPENCODE_CONFIG=str(home / "opencode.json"),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local/share"),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_STATE_HOME=str(home / ".local/state"),
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            OPENCODE_DISABLE_SHARE="1",
            OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        )
        base = [opencode, "run", "--format", "json", "--dir", str(ws), "-m", "fake/fake-model"]
        events = _run([*base, "create out.txt"], ws, env)
        assert (ws / "out.txt").read_text() == "hello\n"
        tool = next(e for e in events if e["type"] == "tool_use")
        assert tool["part"]["tool"] == "bash" and tool["part"]["state"]["status"] == "completed"
        session = events[0]["sessionID"]
        events = _run([*base, "--session", session, "say it again"], ws, env)
        texts = [e["part"]["text"] for e in events if e["type"] == "text"]
        assert texts == ["Second turn reply."]
        assert [r.step_index for r in srv.model_requests() if r.tool_names] == [0, 1, 2]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages", "openai-responses"])
def test_pi_turn_tool_call_and_resume(dirs, api):
    pi = _bin("pi")
    ws, home = dirs
    with FakeModelServer(_script("bash", {"command": "echo hello > out.txt"})) as srv:
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True)
        provider = {
            "baseUrl": srv.base_url if api == "anthropic-messages" else srv.openai_base_url,
            "api": api,
            "apiKey": "sk-fake",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "fake-model", "reasoning": False}],
        }
        (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        (agent / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
        env = _base_env(home, ws)
        env.update(
            PI_CODING_AGENT_DIR=str(agent),
            PI_OFFLINE="1",
            PI_SKIP_VERSION_CHECK="1",
            PI_TELEMETRY="0",
        )
        base = [pi, "--mode", "json", "--provider", "fake", "--model", "fake-model"]
        events = _run([*base, "create out.txt"], ws, env)
        assert (ws / "out.txt").read_text() == "hello\n"
        session = events[0]["id"]
        assert events[0]["type"] == "session"
        ends = [e for e in events if e["type"] == "tool_execution_end"]
        assert ends and not ends[0]["isError"]
        events = _run([*base, "--session", session, "say it again"], ws, env)
        last = [e for e in events if e["type"] == "message_end"][-1]["message"]
        assert last["content"][0]["text"] == "Second turn reply."
        assert [r.step_index for r in srv.model_requests()] == [0, 1, 2]
        assert (
            srv.model_requests()[-1].endpoint
            == {
                "openai-completions": "chat",
                "anthropic-messages": "messages",
                "openai-responses": "responses",
            }[api]
        )


def test_claude_code_fails_fast_on_401_and_unreachable(dirs):
    claude = _bin("claude")
    ws, home = dirs
    env = _base_env(home, ws)
    env.update(
        ANTHROPIC_API_KEY="sk-ant-fake",
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    cmd = [claude, "-p", "hi", "--output-format", "stream-json", "--verbose"]
    with FakeModelServer([Step(error=ErrorReply(401, "bad key"), times=None)]) as srv:
        env["ANTHROPIC_BASE_URL"] = srv.base_url
        t = time.monotonic()
        proc = subprocess.run(
            cmd,
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert time.monotonic() - t < 30
    result = json.loads(proc.stdout.splitlines()[-1])
    assert proc.returncode == 1 and result["is_error"] and result["api_error_status"] == 401
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    proc = subprocess.run(
        cmd, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    result = json.loads(proc.stdout.splitlines()[-1])
    assert proc.returncode == 1 and result["is_error"] and result["api_error_status"] is None


def test_cli_binaries_report_pinned_versions():
    pkg = json.loads((ROOT / "tools" / "npm" / "package.json").read_text())["dependencies"]
    for name, bin_name in [
        ("@anthropic-ai/claude-code", "claude"),
        ("@openai/codex", "codex"),
        ("opencode-ai", "opencode"),
        ("@mariozechner/pi-coding-agent", "pi"),
        ("cline", "cline"),
    ]:
        path = NPM_BIN / bin_name
        if not path.exists():
            continue
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
        assert pkg[name] in out.stdout + out.stderr, (name, out.stdout, out.stderr)
    if not any((NPM_BIN / b).exists() for b in ("claude", "codex", "opencode", "pi", "cline")):
        pytest.skip(f"no pinned CLI installed in {NPM_BIN} (run .ci/install-clis.sh)")
    assert shutil.which("node"), "node must be on PATH for the npm-installed CLIs"
