"""The ``instructions`` session option in the runtime: put before the first prompt of a harness
without the ``instructions`` feature (once), kept from ``session.opened`` on resume, redacted
there, and refused over the size bound before anything is recorded."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import HarnessError
from harness_hookspecs.models import INSTRUCTIONS_MAX

from harness_core import harness

KEY = "sk-ant-" + "i" * 24


@harness("asked")
async def asked(message, session):
    return message.content


def test_instructions_before_the_first_prompt_only(make_controller, workspace):
    async def main():
        async with make_controller(asked) as c:
            ref = await c.open_session(
                harness="asked", workspace=workspace, instructions=f"Be brief. {KEY}"
            )
            first = await c.run_turn(ref, "one")
            second = await c.run_turn(ref, "two")
            return first, second, c.events(ref.session_id)

    first, second, events = anyio.run(main)
    # the harness was asked them before the prompt (its echo of the key is redacted)
    assert first.text == "Be brief. [REDACTED]\n\none"
    assert second.text == "two"
    assert events[0].payload.instructions == "Be brief. [REDACTED]"
    assert [e.payload.prompt for e in events if e.type == "turn.started"] == ["one", "two"]


def test_instructions_over_the_bound_are_refused_and_nothing_is_recorded(
    make_controller, workspace
):
    async def main():
        async with make_controller(asked) as c:
            with pytest.raises(HarnessError) as raised:
                await c.open_session(
                    harness="asked", workspace=workspace, instructions="x" * (INSTRUCTIONS_MAX + 1)
                )
            return raised.value, c.ledger.list_sessions()

    error, sessions = anyio.run(main)
    assert error.reason == "invalid-request" and "instructions" in str(error)
    assert sessions == []
