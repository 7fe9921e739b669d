"""Host tools through the bridge, driven by the real CLIs against the fake model server.

For each harness: two turns in one session, each calling the host tool ``lookup``. The tool's
answer must reach the model's next request; the bridge's events must sit inside the turn
(gap-free, terminal last); the run's token must appear nowhere (ledger, export, any process's
command line, any file the adapter wrote); after a turn's terminal event its token is refused
and the next turn's token works.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_cli_kit.testing import StaticCredentials
from harness_hookspecs import TOKEN_ENV, HostTool
from harness_mcp_bridge.testing import HARNESSES, INITIALIZE, mcp_post, rpc

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall


async def probe(url: str, token: str) -> int:
    """An MCP ``initialize`` with ``token``: the HTTP status the bridge answers."""
    return int((await mcp_post(url, token, INITIALIZE)).status_code)


async def call_succeeds(url: str, token: str) -> bool:
    """Whether a ``tools/call`` of ``lookup`` with ``token`` succeeds."""
    await mcp_post(url, token, INITIALIZE)
    response = await mcp_post(url, token, rpc("tools/call", {"name": "lookup", "arguments": {}}))
    if response.status_code != 200:
        return False
    return not response.json().get("result", {}).get("isError", True)


def cmdline_hits(token: str) -> int:
    hits = 0
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            hits += path.read_bytes().count(token.encode())
        except OSError:
            continue
    return hits


def environ_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def file_hits(root: Path, token: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]


def script() -> list[Step]:
    call = ToolCall("lookup", {"q": "answer"}, mcp_server="harness")
    return [
        Step(text="Looking it up.", tool_calls=[call]),
        Step(text="First done.", match=Match(tool_result=True)),
        Step(text="Again.", tool_calls=[call]),
        Step(text="Second done.", match=Match(tool_result=True)),
    ]


@pytest.mark.cli
@pytest.mark.parametrize("name", list(HARNESSES))
def test_a_turn_calls_a_host_tool_through_the_bridge(name, workspace, make_controller, tmp_path):
    harness = HARNESSES[name]
    markers: list[str] = []
    seen: list[dict[str, Any]] = []  # what the tool saw of its own run, per call
    state: dict[str, Any] = {}

    async def lookup(arguments):
        context = state["controller"].live(state["session"]).context
        token = context.bridge.session_token() if harness.session_lived else context.env[TOKEN_ENV]
        processes = context.session_processes if harness.session_lived else context.turn_processes
        seen.append(
            {
                "token": token,
                "cmdline": cmdline_hits(token),
                "env": any(f"{TOKEN_ENV}={token}".encode() in environ_of(p.pid) for p in processes),
                "status": await probe(context.mcp_bridge.url, token),
            }
        )
        marker = f"host-answer-{uuid.uuid4().hex[:12]}"
        markers.append(marker)
        return {"answer": marker, "q": arguments.get("q")}

    tool = HostTool(
        name="lookup",
        description="Look up an answer in the host",
        function=lookup,
        input_schema={"properties": {"q": {"type": "string"}}},
    )
    controller = make_controller(
        harness.adapter(), StaticCredentials(harness.key_var, harness.key), host_tools=[tool]
    )
    config_extra: dict[str, Any] = {}

    async def main():
        async with controller as c:
            state["controller"] = c
            with FakeModelServer(script()) as server:
                ref = await c.open_session(
                    harness=harness.name,
                    workspace=workspace,
                    model=harness.model,
                    config={**harness.config(server), **config_extra},
                )
                state["session"] = ref.session_id
                url = c.live(ref.session_id).context.mcp_bridge.url
                first = await c.run_turn(ref, "look it up", timeout=90)
                after_first = await call_succeeds(url, seen[0]["token"]) if seen else None
                second = await c.run_turn(ref, "look it up again", timeout=90)
                after_second = await call_succeeds(url, seen[-1]["token"]) if seen else None
                refused = await probe(url, seen[0]["token"]) if seen else None
                requests = server.model_requests()
            export = json.dumps(c.export(ref.session_id))
        return first, second, (after_first, after_second, refused), requests, export

    first, second, after, requests, export = anyio.run(main)
    assert first.status == "completed", first
    assert second.status == "completed", second
    assert len(seen) == 2 and len(markers) == 2, (seen, first.events)

    for result in (first, second):
        types = [e.type for e in result.events]
        sequences = [e.sequence for e in result.events]
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
        assert types[0] == "turn.started" and types[-1] == "turn.completed"
        bridged = [e for e in result.events if getattr(e.payload, "name", "") == "bridge.lookup"]
        assert [e.type for e in bridged] == ["tool.started", "tool.completed"]
        assert bridged[1].payload.ok and bridged[1].payload.summary.endswith("bytes")
        assert 0 < result.events.index(bridged[0]) < len(result.events) - 1

    # the tool's answer reached the model's next request
    for marker in markers:
        answered = [r for r in requests if r.has_tool_result and marker in json.dumps(r.body)]
        assert answered, marker

    # during each call: the token worked, was in the CLI's environment (per-turn CLIs), on no
    # command line; after each turn's terminal event it is refused, and the next turn's works
    assert [s["status"] for s in seen] == [200, 200]
    assert [s["cmdline"] for s in seen] == [0, 0]
    if not harness.session_lived:
        assert all(s["env"] for s in seen)
        assert seen[0]["token"] != seen[1]["token"]
    # after each terminal: 0 successful calls with the old token (a per-turn CLI's token is
    # refused outright; a session-lived agent's may still connect, but calls nothing)
    assert after[:2] == (False, False)
    assert after[2] == (200 if harness.session_lived else 401)

    ledger = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.sqlite*"))
    for token in {s["token"] for s in seen}:
        assert token.encode() not in ledger
        assert token not in export
        assert file_hits(tmp_path / "state", token) == []
        assert token not in repr(first.events) + repr(second.events)


def test_describe_claims_mcp_only_where_a_cli_was_shown_to_use_the_bridge():
    from harness_acp import AcpAdapter

    adapters = [HARNESSES[name].adapter() for name in HARNESSES]
    adapters += [AcpAdapter("codex"), AcpAdapter("cline"), AcpAdapter("custom")]
    claims = {a.describe().provider: "mcp" in a.describe().features for a in adapters}
    assert claims == {
        "claude-code": True,
        "codex": True,
        "opencode": True,
        "acp:claude-code": True,
        "pi": True,  # through the pinned pi-mcp-adapter extension's proxy tool
        "acp:codex": False,
        "acp:cline": False,
        "acp:custom": False,
    }
