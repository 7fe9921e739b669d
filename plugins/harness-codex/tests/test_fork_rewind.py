"""Fork and rewind on real Codex (app-server ``thread/fork`` with ``lastTurnId``,
``thread/revert`` with ``beforeTurnId``) against the fake model: what the next model request
holds of the conversation."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from harness_core.testing.fake_model import FakeModelServer, Step


def _texts(request: Any) -> str:
    return json.dumps(request.body)


@pytest.mark.cli
def test_fork_at_turn_one_holds_turn_one_and_nothing_after(cli: Any) -> None:
    async def main() -> Any:
        async with cli.controller(turn_timeout=90) as controller:
            parent = await cli.open_session(controller, cli.config(cli.url(server)))
            first = await controller.run_turn(parent, "the word is ALPHA")
            await controller.run_turn(parent, "the word is BRAVO")
            server.clear_requests()
            child = await controller.fork(parent, at=first.events[-1].event_id)
            in_child = await controller.run_turn(child, "the word is CHARLIE")
            child_requests = server.model_requests()
            server.clear_requests()
            in_parent = await controller.run_turn(parent, "the word is DELTA")
            return (
                in_child,
                in_parent,
                child_requests,
                server.model_requests(),
                controller.events(parent.session_id),
                controller.events(child.session_id),
            )

    with FakeModelServer([Step(text="noted", times=None)]) as server:
        in_child, in_parent, child_requests, parent_requests, parent_events, child_events = (
            anyio.run(main)
        )
    assert in_child.ok and in_parent.ok, (in_child.reason, in_parent.reason)
    child_body = _texts(child_requests[-1])
    assert "ALPHA" in child_body and "CHARLIE" in child_body and "BRAVO" not in child_body
    parent_body = _texts(parent_requests[-1])
    assert "ALPHA" in parent_body and "BRAVO" in parent_body and "DELTA" in parent_body
    assert "CHARLIE" not in parent_body
    assert [e.type for e in parent_events].count("session.forked") == 1
    assert [e.type for e in child_events][:2] == ["session.opened", "session.forked"]


@pytest.mark.cli
def test_rewind_to_turn_two_drops_turns_two_and_three_from_the_model(cli: Any) -> None:
    async def main() -> Any:
        async with cli.controller(turn_timeout=90, checkpoints=True) as controller:
            ref = await cli.open_session(controller, cli.config(cli.url(server)))
            for word in ("ALPHA", "BRAVO", "CHARLIE"):
                result = await controller.run_turn(ref, f"the word is {word}")
                assert result.ok, result.reason
            events = controller.events(ref.session_id)
            starts = [
                e.payload.checkpoint_id
                for e in events
                if e.type == "checkpoint.created" and e.payload.reason == "turn-start"
            ]
            rewound = await controller.rewind(ref, starts[1])  # before turn 2
            server.clear_requests()
            after = await controller.run_turn(ref, "the word is DELTA")
            return (
                rewound,
                after,
                server.model_requests(),
                events,
                controller.events(ref.session_id),
            )

    with FakeModelServer([Step(text="noted", times=None)]) as server:
        rewound, after, requests, before, every = anyio.run(main)
    assert rewound.conversation and rewound.turns_kept == 1
    assert after.ok, after.reason
    body = _texts(requests[-1])
    assert "ALPHA" in body and "DELTA" in body
    assert "BRAVO" not in body and "CHARLIE" not in body
    assert every[: len(before)] == before  # the ledger still holds every event
