"""Steer on real Codex (app-server ``turn/steer``) against the fake model: the host's text
is in the model request that follows it, inside the same turn, which ends with one terminal."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

STEER = "also mention the colour teal"


@pytest.mark.cli
def test_steer_reaches_the_next_model_request_of_the_same_turn(cli: Any) -> None:
    script = [
        # the first reply waits: the steer arrives while the turn runs
        Step(text="Looking.", tool_calls=[ToolCall("exec_command", {"cmd": "echo hi"})], delay=3),
        Step(text="Done, teal.", match=Match(tool_result=True)),
    ]

    async def main() -> Any:
        async with cli.controller(turn_timeout=90) as controller:
            ref = await cli.open_session(controller, cli.config(cli.url(server)))
            async with controller.turn(ref, "say hi") as turn:
                events = []
                async for event in turn:
                    events.append(event)
                    if event.type == "status" and not any(e.type == "turn.steered" for e in events):
                        while not server.model_requests():
                            await anyio.sleep(0.05)
                        await controller.steer(ref, STEER)
            return events

    with FakeModelServer(script) as server:
        events = anyio.run(main)
        requests = server.model_requests()
    kinds = [e.type for e in events]
    assert kinds.count("turn.steered") == 1, kinds
    assert [e.terminal for e in events].count(True) == 1 and kinds[-1] == "turn.completed"
    assert len({e.turn_id for e in events}) == 1
    assert STEER not in json.dumps(requests[0].body)
    assert STEER in json.dumps(requests[-1].body)
    assert len(requests) == 2  # one turn: the tool's result and the steer in one request


@pytest.mark.cli
def test_steer_without_a_running_turn_is_refused(cli: Any) -> None:
    from harness_hookspecs import HarnessError

    async def main() -> Any:
        async with cli.controller(turn_timeout=90) as controller:
            ref = await cli.open_session(controller, cli.config("http://127.0.0.1:9/v1"))
            with pytest.raises(HarnessError) as refused:
                await controller.steer(ref, STEER)
            return refused.value, controller.events(ref.session_id)

    refused, events = anyio.run(main)
    assert refused.reason == "turn-not-found"
    assert [e.type for e in events] == ["session.opened"]
