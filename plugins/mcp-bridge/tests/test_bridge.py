"""The bridge on its own: start-up, loopback binding, the auth matrix, caps, tool selection."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import pytest
from harness_hookspecs import HarnessError, HostTool, ToolCompleted, ToolStarted
from harness_mcp_bridge import APPROVAL_TOOL, Bridge, Limits, select_tools
from harness_mcp_bridge.testing import INITIALIZE as INIT
from harness_mcp_bridge.testing import mcp_post, rpc


async def echo(arguments):
    return {"echo": arguments.get("q")}


async def big(arguments):
    return "x" * 100_000


async def broken(arguments):
    raise RuntimeError("secret internal text sk-live-abcdef123456")


def tool(name: str = "echo", function: Any = echo) -> HostTool:
    return HostTool(name=name, description=f"the {name} tool", function=function)


class Client:
    def __init__(self, url: str) -> None:
        self.url = url

    async def post(self, body: dict[str, Any], token: str | None, **headers: str) -> Any:
        return await mcp_post(self.url, token, body, **headers)

    async def call(self, token: str, name: str = "echo", **arguments: Any) -> dict[str, Any]:
        response = await self.post(rpc("tools/call", {"name": name, "arguments": arguments}), token)
        assert response.status_code == 200, response.status_code
        result: dict[str, Any] = response.json()["result"]
        return result


def serve(tools: list[HostTool], body: Any, **kwargs: Any) -> Any:
    """Run ``await body(bridge, client, events)`` against a started bridge."""

    async def main() -> Any:
        bridge = Bridge(tools, **kwargs)
        events: list[Any] = []
        async with anyio.create_task_group() as group:
            started = time.perf_counter()
            await group.start(bridge.run)
            up = time.perf_counter() - started
            try:
                return up, bridge, await body(bridge, Client(bridge.url), events)
            finally:
                await bridge.close()

    return anyio.run(main)


def test_up_within_200ms_on_loopback_only():
    async def body(bridge, client, events):
        return bridge.address

    up, bridge, sockname = serve([tool()], body)
    assert up <= 0.2, up
    assert sockname[0] == "127.0.0.1"
    assert bridge.url == f"http://127.0.0.1:{sockname[1]}/mcp"
    # closed: nothing listens any more
    with pytest.raises(httpx.ConnectError):
        httpx.post(bridge.url, json=INIT, timeout=2)


def test_the_auth_matrix():
    async def body(bridge, client, events):
        other = Bridge([tool()])  # another session's bridge: its tokens mean nothing here
        foreign = other.begin_run("elsewhere", events.append)
        await other.close()  # never served: its socket closes
        statuses: dict[str, Any] = {}
        statuses["none"] = await client.post(INIT, None)
        statuses["wrong"] = await client.post(INIT, "hmcp_" + "A" * 43)
        statuses["not bearer"] = await client.post(INIT, None, Authorization="Basic abc")
        first = bridge.begin_run("run-1", lambda p: True)
        statuses["valid"] = await client.post(INIT, first)
        statuses["foreign host"] = await client.post(INIT, first, Host="evil.example:80")
        statuses["another session's"] = await client.post(INIT, foreign)
        bridge.end_run("run-1")
        statuses["revoked"] = await client.post(INIT, first)
        second = bridge.begin_run("run-2", lambda p: True)
        statuses["another run's"] = await client.post(INIT, first)
        statuses["next run's"] = await client.post(INIT, second)
        bridge.end_run("run-2")
        short = bridge.begin_run("run-3", lambda p: True, deadline=time.monotonic() + 0.05)
        await anyio.sleep(0.1)
        statuses["expired"] = await client.post(INIT, short)
        return statuses

    _, _, statuses = serve([tool()], body)
    codes = {name: response.status_code for name, response in statuses.items()}
    assert codes == {
        "none": 401,
        "wrong": 401,
        "not bearer": 401,
        "valid": 200,
        "foreign host": 421,
        "another session's": 401,
        "revoked": 401,
        "another run's": 401,
        "next run's": 200,
        "expired": 401,
    }
    for name, response in statuses.items():
        if response.status_code == 401:
            assert response.headers["www-authenticate"].startswith("Bearer"), name


def test_tokens_are_stored_hashed_read_only_with_the_url_as_audience():
    async def body(bridge, client, events):
        token = bridge.begin_run("run-1", events.append)
        return token, repr(vars(bridge.tokens)), list(bridge.tokens.grants)

    _, bridge, (token, stored, grants) = serve([tool()], body)
    assert token not in stored and token.startswith("hmcp_") and len(token) > 40
    assert [(g.scopes, g.audience) for g in grants] == [(frozenset({"tools:read"}), bridge.url)]


def test_a_session_token_calls_only_while_a_run_is_active():
    async def body(bridge, client, events):
        session = bridge.session_token()
        idle_connect = (await client.post(INIT, session)).status_code
        idle_call = await client.call(session, q="idle")
        bridge.begin_run("run-1", lambda p: events.append(p) or True)
        active_call = await client.call(session, q="active")
        bridge.end_run("run-1")
        after = await client.call(session, q="after")
        return idle_connect, idle_call, active_call, after

    _, _, (idle_connect, idle, active, after) = serve([tool()], body)
    assert idle_connect == 200
    assert idle["isError"] and after["isError"]
    assert not active["isError"] and '"active"' in active["content"][0]["text"]


def test_a_call_is_recorded_in_its_run_and_results_and_calls_are_capped():
    async def body(bridge, client, events):
        token = bridge.begin_run("run-1", lambda p: events.append(p) or True)
        results = [
            await client.call(token, "big"),
            await client.call(token, "broken"),
            await client.call(token, "echo", q="third"),
        ]
        return results

    limits = Limits(max_result_bytes=1000, max_calls_per_turn=2)
    tools = [tool("big", big), tool("broken", broken), tool()]
    _, _, results = serve(tools, lambda b, c, e: _with_events(body, b, c, e), limits=limits)
    (big_result, broken_result, limited), events = results
    text = big_result["content"][0]["text"]
    assert not big_result["isError"] and len(text.encode()) <= 1000 and "truncated" in text
    assert broken_result["isError"]
    assert broken_result["content"][0]["text"] == "The host tool failed."
    assert limited["isError"] and "limit" in limited["content"][0]["text"]
    assert [(type(e).__name__, e.name, getattr(e, "ok", None)) for e in events] == [
        ("ToolStarted", "bridge.big", None),
        ("ToolCompleted", "bridge.big", True),
        ("ToolStarted", "bridge.broken", None),
        ("ToolCompleted", "bridge.broken", False),
        ("ToolCompleted", "bridge.echo", False),
    ]
    assert events[1].summary == "1000 bytes (truncated)"
    assert events[4].summary == "call limit"
    assert "secret internal text" not in repr(events) + repr(results)
    assert all(isinstance(e, ToolStarted | ToolCompleted) for e in events)


async def _with_events(body, bridge, client, events):
    return await body(bridge, client, events), events


def test_a_call_after_the_run_ended_records_nothing():
    async def body(bridge, client, events):
        token = bridge.begin_run("run-1", lambda p: False)  # the turn already ended
        return await client.call(token, q="late")

    _, _, result = serve([tool()], body)
    assert result["isError"] and result["content"][0]["text"] == "The run has ended."


def test_tools_are_selected_by_include_and_exclude_patterns():
    tools = [tool("Get_user"), tool("Get_secret"), tool("RunView_x"), tool("Delete_user")]
    names = lambda config: [t.name for t in select_tools(tools, config)]  # noqa: E731
    assert names({}) == ["Get_user", "Get_secret", "RunView_x", "Delete_user"]
    assert names({"include": ["Get_*", "RunView_*"], "exclude": ["*secret"]}) == [
        "Get_user",
        "RunView_x",
    ]
    assert names({"enabled": False}) == []
    with pytest.raises(HarnessError) as caught:
        select_tools(tools, {"include": "Get_*"})
    assert caught.value.reason == "invalid-request"
    with pytest.raises(HarnessError):
        Limits.from_config({"max_calls_per_turn": 0})
    assert Limits.from_config({"max_result_bytes": 10}).max_result_bytes == 10


def test_host_tools_check_their_fields():
    with pytest.raises(ValueError):
        HostTool(name="has space", description="d", function=echo)
    with pytest.raises(ValueError):
        HostTool(name="sync", description="d", function=lambda arguments: 1)
    with pytest.raises(ValueError):
        HostTool(name="t", description="d", function=echo, input_schema={"type": "array"})
    assert HostTool(name="t", description="d", function=echo).input_schema["type"] == "object"


def test_the_approval_tool_needs_the_approval_scope_of_the_running_turn():
    asked: list[Any] = []

    async def answer(arguments):
        asked.append(dict(arguments))
        return '{"behavior": "allow", "updatedInput": {}}'

    async def names(client, token):
        response = await client.post(rpc("tools/list"), token)
        return [t["name"] for t in response.json()["result"]["tools"]]

    async def body(bridge, client, events):
        session = bridge.session_token()
        token = bridge.begin_run("run-1", lambda p: events.append(p) or True)
        out: dict[str, Any] = {"read-only list": await names(client, token)}
        out["read-only call"] = await client.call(token, APPROVAL_TOOL, tool_name="Bash", input={})
        assert bridge.serve_approvals("elsewhere", answer) is None  # not the active run
        out["served as"] = bridge.serve_approvals("run-1", answer)
        out["granted list"] = await names(client, token)
        out["session token list"] = await names(client, session)
        out["session token call"] = await client.call(session, APPROVAL_TOOL, tool_name="Bash")
        out["granted call"] = await client.call(token, APPROVAL_TOOL, tool_name="Bash", input={})
        bridge.end_run("run-1")
        second = bridge.begin_run("run-2", lambda p: True)
        out["next run list"] = await names(client, second)
        return out

    _, _, out = serve([tool()], body)
    assert out["read-only list"] == ["echo"] and out["session token list"] == ["echo"]
    assert out["read-only call"]["isError"] and out["session token call"]["isError"]
    assert out["served as"] == APPROVAL_TOOL
    assert out["granted list"] == ["echo", APPROVAL_TOOL]
    granted = out["granted call"]
    assert not granted["isError"] and len(granted["content"]) == 1
    assert json.loads(granted["content"][0]["text"])["behavior"] == "allow"
    assert asked == [{"tool_name": "Bash", "input": {}}]  # once: only the granted call
    assert out["next run list"] == ["echo"]  # the scope was the run's, not the session's


def test_an_approval_in_flight_when_the_run_ends_is_cancelled():
    state: dict[str, Any] = {}

    async def never(arguments):
        state["waiting"] = True
        await anyio.sleep(3600)
        return "unreachable"

    async def body(bridge, client, events):
        token = bridge.begin_run("run-1", lambda p: True)
        bridge.serve_approvals("run-1", never)
        result: dict[str, Any] = {}

        async def ask():
            result.update(await client.call(token, APPROVAL_TOOL, tool_name="Bash", input={}))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            while not state.get("waiting"):
                await anyio.sleep(0.01)
            bridge.end_run("run-1")
        return result, time.perf_counter() - started

    _, _, (result, seconds) = serve([tool()], body)
    assert result["isError"] and seconds < 5


def test_no_host_tool_may_take_the_approval_tools_name():
    with pytest.raises(HarnessError):
        Bridge([tool(APPROVAL_TOOL)])
