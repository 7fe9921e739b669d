"""ACP fork (``session/fork``) with the real ``claude-code-acp`` against the fake model: the
child holds the parent's whole conversation (ACP forks at the session's end), the parent goes on
unaffected, lineage in both ledgers; a fork at an earlier turn, or on an agent that does not
advertise fork, is ``unsupported-feature`` with nothing opened. ACP has no steer: refused."""

from __future__ import annotations

import json

import anyio
import pytest
from harness_acp import AcpAdapter
from harness_cli_kit.testing import installed_cli
from harness_hookspecs import HarnessError

from harness_core.testing.fake_model import FakeModelServer, Step

pytestmark = pytest.mark.cli


def last_body(server: FakeModelServer) -> str:
    return json.dumps(server.model_requests()[-1].body)


def test_claude_code_acp_forks_the_whole_conversation(workspace, controller):
    config_of = {"command": [installed_cli("claude-code-acp")]}

    async def main(server):
        config = {**config_of, "base_url": server.base_url}
        async with controller("ANTHROPIC_API_KEY", turn_timeout=90) as c:
            assert "fork" in c.describe("acp:claude-code").features
            assert "fork" not in c.describe("acp:codex").features
            parent = await c.open_session(
                harness="acp:claude-code", workspace=workspace, model="claude-sonnet-4-5",
                config=config,
            )  # fmt: skip
            first = await c.run_turn(parent, "the word is ALPHA")
            assert first.ok, first.reason
            assert (await c.run_turn(parent, "the word is BRAVO")).ok
            before = c.events(parent.session_id)
            with pytest.raises(HarnessError) as earlier:
                await c.fork(parent, at=first.events[-1].event_id)
            refused_nothing = c.events(parent.session_id) == before and len(c.sessions()) == 1
            async with c.turn(parent, "the word is GOLF") as running:
                with pytest.raises(HarnessError) as steer:
                    await c.steer(parent, "not through ACP")
                await running.drain()
            child = await c.fork(parent)
            in_child = await c.run_turn(child, "the word is CHARLIE")
            child_body = last_body(server)
            again = await c.run_turn(child, "the word is ECHO")
            again_body = last_body(server)
            in_parent = await c.run_turn(parent, "the word is DELTA")
            parent_body = last_body(server)
            results = (in_child, again, in_parent)
            return (
                earlier.value, steer.value, refused_nothing, results,
                (child_body, again_body, parent_body),
                c.events(parent.session_id), c.events(child.session_id), parent, child,
            )  # fmt: skip

    with FakeModelServer([Step(text="noted", times=None)]) as server:
        (earlier, steer, refused_nothing, results, bodies, parent_events, child_events, parent,
         child) = anyio.run(main, server)  # fmt: skip
    assert earlier.reason == "unsupported-feature" and "last turn only" in str(earlier)
    assert refused_nothing
    assert steer.reason == "unsupported-feature"
    assert all(result.ok for result in results), [r.reason for r in results]
    child_body, again_body, parent_body = bodies
    for word in ("ALPHA", "BRAVO", "GOLF", "CHARLIE"):
        assert word in child_body, word
    assert "CHARLIE" in again_body and "ECHO" in again_body  # the child resumes its own
    assert "DELTA" not in child_body and "DELTA" not in again_body
    assert all(word in parent_body for word in ("ALPHA", "BRAVO", "GOLF", "DELTA"))
    assert "CHARLIE" not in parent_body and "ECHO" not in parent_body
    for side in (parent_events, child_events):
        (forked,) = [e.payload for e in side if e.type == "session.forked"]
        assert (forked.parent_session_id, forked.child_session_id) == (
            parent.session_id,
            child.session_id,
        )
        assert forked.turns == 3
    assert [e.type for e in child_events][:2] == ["session.opened", "session.forked"]


def test_describe_says_where_acp_forks():
    details = AcpAdapter("claude-code").describe().details
    assert details["fork"] == "at the session's last turn only"
    assert "fork" not in AcpAdapter("cline").describe().features
