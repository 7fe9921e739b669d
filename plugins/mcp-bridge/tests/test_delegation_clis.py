"""Delegation through the bridge with the real CLIs (issue 32): a Claude Code parent, against the
fake model, calls the ``run_agent`` host tool for a Codex child and for a one-function child.

Each child's answer reaches the parent's next model request; both children's records and
``session.opened`` name the parent and the parent's ``tool.started``; the parent's run token is
refused by a child's bridge; closing the parent closes the children.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import pytest
from harness_cli_kit.testing import StaticCredentials
from harness_hookspecs import TOKEN_ENV
from harness_mcp_bridge.testing import HARNESSES, INITIALIZE, mcp_post

from harness_core import harness
from harness_core.delegation import ChildProfile, Delegation, children_of
from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

CODEX_MARKER = f"codex-answer-{uuid.uuid4().hex[:10]}"
HELPER_MARKER = f"helper-answer-{uuid.uuid4().hex[:10]}"
STATE: dict[str, Any] = {}


@harness("helper", features=("resume", "cancel"))
async def helper(message, session):
    # While the parent's turn waits on this call: its token opens its own bridge, not a child's.
    controller, parent = STATE["controller"], STATE["parent"]
    parent_context = controller.live(parent).context
    token = parent_context.env[TOKEN_ENV]
    own_url = controller.live(session.session_id).context.mcp_bridge.url
    STATE["parent_token_on_parent"] = (
        await mcp_post(parent_context.mcp_bridge.url, token, INITIALIZE)
    ).status_code
    STATE["parent_token_on_child"] = (await mcp_post(own_url, token, INITIALIZE)).status_code
    return f"{HELPER_MARKER} for {message.content}"


def script() -> list[Step]:
    def run_agent(name: str, prompt: str) -> ToolCall:
        return ToolCall("run_agent", {"harness": name, "prompt": prompt}, mcp_server="harness")

    return [
        Step(text="Asking codex.", tool_calls=[run_agent("codex", "codex, review the plan")]),
        # the Codex child's one request
        Step(text=CODEX_MARKER, match=Match(contains="codex, review the plan")),
        Step(
            text="Asking the helper.",
            tool_calls=[run_agent("helper", "helper, sum it up")],
            match=Match(tool_result=True),
        ),
        Step(
            text="And a harness the host does not offer.",
            tool_calls=[run_agent("nosuch", "anyone there?")],
            match=Match(tool_result=True),
        ),
        Step(text="Both answered.", match=Match(tool_result=True)),
    ]


@pytest.mark.cli
def test_claude_code_delegates_to_codex_and_to_a_function_harness(
    workspace, make_controller, tmp_path
):
    claude, codex = HARNESSES["claude-code"], HARNESSES["codex"]

    async def main():
        with FakeModelServer(script()) as server:
            delegation = Delegation(
                {
                    "codex": ChildProfile(model=codex.model, config=codex.config(server)),
                    "helper": ChildProfile(),
                }
            )
            controller = make_controller(
                claude.adapter(),
                codex.adapter(),
                helper,
                StaticCredentials(claude.key_var, claude.key),
                StaticCredentials(codex.key_var, codex.key),
                delegation=delegation,
            )
            async with controller as c:
                STATE["controller"] = c
                ref = await c.open_session(
                    harness="claude-code",
                    workspace=workspace,
                    model=claude.model,
                    config=claude.config(server),
                )
                STATE["parent"] = ref.session_id
                result = await c.run_turn(ref, "delegate twice", timeout=180)
                children = children_of(c.ledger, ref.session_id)
                child_events = {r.session_id: c.events(r.session_id) for r in children}
                await c.close_session(ref)
                closed = [c.ledger.get_session(r.session_id).status for r in children]
                requests = server.model_requests()
        return ref, result, children, child_events, closed, requests

    ref, result, children, child_events, closed, requests = anyio.run(main)
    assert result.status == "completed", result
    assert result.text == "Both answered."

    # each child's answer arrived in the parent's next model request (a tool result)
    for marker in (CODEX_MARKER, HELPER_MARKER):
        answered = [r for r in requests if r.has_tool_result and marker in json.dumps(r.body)]
        assert answered, marker

    # a refused call is a tool error the model sees (the fixed reason and hint), nothing opened
    refusal = "invalid-request: the request is invalid (unknown harness 'nosuch')"
    assert [r for r in requests if r.has_tool_result and refusal in json.dumps(r.body)]

    # both children recorded, each linked to the parent's tool.started of its call
    assert [r.ref.harness for r in children] == ["codex", "helper"]
    started = [
        e
        for e in result.events
        if e.type == "tool.started" and e.payload.name == "bridge.run_agent"
    ]
    assert len(started) == 3
    for record, call in zip(children, started[:2], strict=True):
        assert (record.parent_session_id, record.parent_event_id) == (ref.session_id, call.event_id)
        opened = child_events[record.session_id][0]
        assert opened.type == "session.opened"
        assert opened.payload.parent_session_id == ref.session_id
        assert opened.payload.parent_event_id == call.event_id
        types = [e.type for e in child_events[record.session_id]]
        assert types.count("turn.completed") == 1, types
    completed = [
        e
        for e in result.events
        if e.type == "tool.completed" and e.payload.name == "bridge.run_agent"
    ]
    assert [e.payload.ok for e in completed] == [True, True, False]
    assert completed[2].payload.summary == "invalid-request"

    # the parent's run token opens the parent's bridge only
    assert STATE["parent_token_on_parent"] == 200
    assert STATE["parent_token_on_child"] == 401
    assert closed == ["closed", "closed"]


@pytest.mark.cli
def test_claude_code_delegating_to_itself_stops_at_depth_2_with_an_error_its_model_sees(
    workspace, make_controller
):
    claude = HARNESSES["claude-code"]
    deeper = ToolCall(
        "run_agent", {"harness": "claude-code", "prompt": "go deeper"}, mcp_server="harness"
    )
    refusal = "limit-exceeded: the turn exceeded a configured limit (delegation depth 2 reached)"

    def step(text, **match):
        return Step(text=text, match=Match(**match))

    script = [
        Step(text="Parent delegates.", tool_calls=[deeper]),
        Step(text="Child delegates.", tool_calls=[deeper], match=Match(contains="go deeper")),
        Step(text="Grandchild delegates.", tool_calls=[deeper], match=Match(contains="go deeper")),
        step("grandchild stopped", tool_result=True),
        step("child done", tool_result=True),
        step("parent done", tool_result=True),
    ]

    async def main():
        with FakeModelServer(script) as server:
            profile = ChildProfile(model=claude.model, config=claude.config(server))
            controller = make_controller(
                claude.adapter(),
                StaticCredentials(claude.key_var, claude.key),
                delegation=Delegation({"claude-code": profile}, max_depth=2),
            )
            async with controller as c:
                ref = await c.open_session(
                    harness="claude-code",
                    workspace=workspace,
                    model=claude.model,
                    config=claude.config(server),
                )
                result = await c.run_turn(ref, "start", timeout=240)
                [child] = children_of(c.ledger, ref.session_id)
                [grandchild] = children_of(c.ledger, child.session_id)
                below = children_of(c.ledger, grandchild.session_id)
                requests = server.model_requests()
        return result, below, requests

    result, below, requests = anyio.run(main)
    assert result.status == "completed" and result.text == "parent done", result
    assert below == []  # the session at depth 2 opened nothing
    # the grandchild's model saw the refusal as its tool's result
    seen = [r for r in requests if r.has_tool_result and refusal in json.dumps(r.body)]
    assert len(seen) == 1
