"""The runtime side: tools from plugins and the host, per-session selection, the run's token in
the turn's environment only, bridged events inside the turn, revocation at the terminal event,
the bridge gone at close. Driven by a small in-test adapter that calls the bridge itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from harness_hookspecs import (
    TOKEN_ENV,
    HarnessDescriptor,
    HostTool,
    MessageCompleted,
    SessionRef,
    Status,
    TurnCompleted,
    hookimpl,
)
from harness_mcp_bridge.testing import INITIALIZE as INIT
from harness_mcp_bridge.testing import mcp_post, rpc

from harness_core import Controller, plugins_from


class BridgeCaller:
    """A harness that calls the bridge's ``tools/list`` and each named tool, like a CLI would."""

    name = "bridge-caller"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(provider=self.name, targets=["local"], features=["mcp", "cancel"])

    async def open_session(self, request, context):
        return SessionRef(provider=self.name, target="local", session_id=context.session_id)

    async def resume_session(self, request, context):
        return request.session

    async def run_turn(self, request, context) -> AsyncIterator[Any]:
        bridge = context.mcp_bridge
        token = context.env.get(TOKEN_ENV)
        self.seen.append({"bridge": bridge, "token": token})
        if bridge is None:
            yield TurnCompleted(text="no bridge")
            return
        listed = await mcp_post(bridge.url, token, rpc("tools/list"))
        names = [t["name"] for t in listed.json()["result"]["tools"]]
        yield Status(message=f"token {token}")  # must be redacted
        texts = []
        for name in names:
            call = {"name": name, "arguments": {"q": request.prompt}}
            reply = await mcp_post(bridge.url, token, rpc("tools/call", call))
            texts.append(reply.json()["result"]["content"][0]["text"])
        yield MessageCompleted(role="assistant", text=" | ".join(texts))
        yield TurnCompleted(text=",".join(names))

    async def cancel_turn(self, request, context):
        return None

    async def close_session(self, request, context):
        return None


async def shout(arguments):
    return str(arguments.get("q", "")).upper()


async def count(arguments):
    return {"length": len(str(arguments.get("q", "")))}


class ToolPlugin:
    @hookimpl
    def register_host_tools(self, register):
        register(HostTool(name="Get_length", description="length of q", function=count))
        register(HostTool(name="Get_secret", description="never selected", function=count))


def run(adapter: BridgeCaller, tmp_path, body, **controller: Any) -> Any:
    async def main():
        plugins = plugins_from([adapter, ToolPlugin()])
        async with Controller(
            plugins=plugins,
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **controller,
        ) as c:
            return await body(c)

    return anyio.run(main)


def test_plugin_and_host_tools_are_served_inside_the_turn(tmp_path):
    adapter = BridgeCaller()
    host = HostTool(name="Get_shout", description="q in capitals", function=shout)

    async def body(c):
        ref = await c.open_session(
            harness=adapter.name,
            workspace=str(tmp_path),
            config={"mcp_loopback": {"include": ["Get_*"], "exclude": ["*secret"]}},
        )
        first = await c.run_turn(ref, "hello")
        url = adapter.seen[0]["bridge"].url
        stale = await mcp_post(url, adapter.seen[0]["token"], INIT)
        second = await c.run_turn(ref, "again")
        await c.close_session(ref)
        export = c.export(ref.session_id)
        return first, second, stale.status_code, url, export

    first, second, stale, url, export = run(adapter, tmp_path, body, host_tools=[host])
    assert first.status == second.status == "completed"
    assert sorted(first.text.split(",")) == ["Get_length", "Get_shout"]
    assert "HELLO" in first.events[-2].payload.text and "5" in first.events[-2].payload.text
    for result in (first, second):
        sequences = [e.sequence for e in result.events]
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
        types = [e.type for e in result.events]
        assert types[0] == "turn.started" and types[-1] == "turn.completed"
        bridged = [(e.type, e.payload.name) for e in result.events if e.type.startswith("tool.")]
        assert len(bridged) == 4 and all(name.startswith("bridge.Get_") for _, name in bridged)
    tokens = [seen["token"] for seen in adapter.seen]
    assert all(tokens) and tokens[0] != tokens[1]
    assert stale == 401  # the first run's token, after its terminal event
    text = repr(first.events) + repr(second.events) + repr(export)
    assert not any(token in text for token in tokens)
    assert "[REDACTED]" in repr(first.events)
    ledger = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.sqlite*"))
    assert not any(token.encode() in ledger for token in tokens)
    with pytest.raises(httpx.ConnectError):  # closed with the session
        httpx.post(url, json=INIT, timeout=2)


def test_a_session_that_selects_no_tool_gets_no_bridge_and_no_token(tmp_path):
    adapter = BridgeCaller()

    async def body(c):
        ref = await c.open_session(
            harness=adapter.name,
            workspace=str(tmp_path),
            config={"mcp_loopback": {"include": ["Nothing_*"]}},
        )
        return await c.run_turn(ref, "hello")

    result = run(adapter, tmp_path, body)
    assert result.text == "no bridge"
    assert adapter.seen == [{"bridge": None, "token": None}]


def test_bad_tool_config_is_invalid_request(tmp_path):
    adapter = BridgeCaller()

    async def body(c):
        await c.open_session(
            harness=adapter.name,
            workspace=str(tmp_path),
            config={"mcp_loopback": {"max_calls_per_turn": "many"}},
        )

    from harness_hookspecs import HarnessError

    with pytest.raises(HarnessError) as caught:
        run(adapter, tmp_path, body)
    assert caught.value.reason == "invalid-request"


def test_a_call_in_flight_at_cancel_records_nothing_after_the_terminal(tmp_path):
    adapter = BridgeCaller()
    release = anyio.Event()
    ended = anyio.Event()

    async def slow(arguments):
        try:
            await release.wait()
            return "late"
        finally:
            # cancelled with the turn, or answering late: either way the bridge records what
            # it records right after this (no await between), before this test looks
            ended.set()

    async def body(c):
        ref = await c.open_session(
            harness=adapter.name,
            workspace=str(tmp_path),
            config={"mcp_loopback": {"include": ["Get_slow"]}},
        )
        async with c.turn(ref, "hello") as turn:
            async for event in turn:
                if event.type == "tool.started":
                    await c.cancel_turn(ref)
        # The tool may answer after the turn ended (or was cancelled with the client's request):
        # either way its tool.completed finds the turn over.
        release.set()
        with anyio.fail_after(10):
            await ended.wait()
        return turn.result(), c.events(ref.session_id)

    host = HostTool(name="Get_slow", description="answers late", function=slow)
    result, stored = run(adapter, tmp_path, body, host_tools=[host])
    assert result.status == "cancelled"
    turn_events = [e for e in stored if e.turn_id == result.turn_id]
    assert turn_events[-1].type == "turn.cancelled"
    assert [e.type for e in turn_events].count("tool.started") == 1
    # the call ends with the turn (cancelled with the client's request, recorded before the
    # terminal) or not at all: never after the terminal, never as a success
    completed = [e.payload for e in turn_events if e.type == "tool.completed"]
    assert all(not p.ok for p in completed) and len(completed) <= 1
