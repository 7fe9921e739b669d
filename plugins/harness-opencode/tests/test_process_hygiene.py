"""Every process of an OpenCode turn is gone after it: the turn's ``opencode serve`` and what
its tools started (a ``sleep`` run by the bash tool), after a cancel, a timeout, a completed
turn. (A ``harness run`` killed with SIGKILL mid-turn: tests/acceptance/test_killed_cli_run.py,
for every CLI.)"""

from __future__ import annotations

import uuid

import anyio
import pytest

from harness_core import proctree
from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall
from harness_core.testing.processes import left_behind, tagged, with_marker


def script(command: str) -> list[Step]:
    call = ToolCall("bash", {"command": command, "description": "wait"})
    return [
        Step(text="Waiting.", tool_calls=[call]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]


async def wait_for_marker(marker: str) -> None:
    with anyio.fail_after(60):
        while not with_marker(marker):
            await anyio.sleep(0.05)


@pytest.mark.cli
@pytest.mark.parametrize("ending", ["cancel", "timeout", "completed"])
def test_the_server_and_its_tools_are_gone_after_the_turn(cli, ending):
    marker = f"oc-hygiene-{uuid.uuid4().hex[:12]}"
    command = f"echo {marker}" if ending == "completed" else f"sleep 300 && echo {marker}"

    async def main(server):
        async with cli.controller(turn_timeout=45 if ending == "timeout" else 90) as c:
            ref = await cli.open_session(c, cli.config(cli.url(server)))
            context = c.live(ref.session_id).context
            prefix = f"{proctree.owner()}/{context.tag_prefix}"
            seen: list[int] = []
            async with c.turn(ref, "wait please") as turn:
                async for event in turn:
                    if event.type == "tool.started" and ending != "completed":
                        await wait_for_marker(marker)
                        seen = tagged(prefix)  # the server, the shell, the sleep
                        if ending == "cancel":
                            await c.cancel_turn(ref, turn.turn_id)
                    elif event.type == "status" and ending == "completed":
                        seen = tagged(prefix)
                    last = event
            return last, seen, prefix

    with FakeModelServer(script(command)) as server:
        last, seen, prefix = anyio.run(main, server)
    expected = {"cancel": "turn.cancelled", "timeout": "turn.failed", "completed": "turn.completed"}
    assert last.type == expected[ending], last
    assert len(seen) >= (1 if ending == "completed" else 3), seen
    assert left_behind(prefix, marker) == []
