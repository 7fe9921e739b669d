"""History from the ledger: a one-function harness resumed in a new controller (with a fresh
adapter, as in a new process) gets session.history back; any harness can read the replayable
transcript of earlier turns from its context."""

from __future__ import annotations

import json

import anyio
from harness_hookspecs import ToolCompleted, ToolStarted

from harness_core import harness
from harness_core.function_harness import FunctionHarness
from harness_core.transcript import history_pairs, render_transcript

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def memo(message, session):
    if message.content == "use a tool":
        yield ToolStarted(call_id="t1", name="shell", summary="ran a command")
        yield ToolCompleted(call_id="t1", name="shell", summary="ran a command")
    if message.content.startswith("count"):  # then the schema the runtime appended
        yield json.dumps({"n": len(session.history)})
        return
    yield f"history={len(session.history)}"


def fresh():
    # A new FunctionHarness object has no memory: what a new process would have.
    return FunctionHarness("memo", memo)


def test_history_and_transcript_survive_a_fresh_adapter(make_controller, workspace):
    seen = {}

    @harness("reader")
    async def reader(message, session):
        return "ok"

    async def first():
        async with make_controller(fresh()) as c:
            ref = await c.open_session(harness="memo", workspace=workspace)
            await c.run_turn(ref, "first")
            await c.run_turn(ref, "use a tool")
            await c.run_turn(ref, "count", output_schema=SCHEMA)
            return ref

    ref = anyio.run(first)

    async def second():
        async with make_controller(fresh()) as c:
            await c.resume_session(ref, workspace=workspace)
            result = await c.run_turn(ref, "again")
            seen["transcript"] = c.live(ref.session_id).context.transcript()
            return result

    result = anyio.run(second)
    # three turns of two entries each, plus this turn's input
    assert result.text == "history=7"
    turns = seen["transcript"]
    assert [t.prompt for t in turns] == ["first", "use a tool", "count", "again"]
    assert [t.answer for t in turns[:2]] == ["history=1", "history=3"]
    assert turns[1].tools == ("shell (ok): ran a command",)
    assert turns[2].output == {"n": 5} and turns[3].status == "completed"
    assert history_pairs(turns[:1]) == [("user", "first"), ("assistant", "history=1")]
    text = render_transcript(turns[:2])
    assert text.splitlines() == [
        "[turn 1] user: first",
        "[turn 1] assistant: history=1",
        "[turn 2] user: use a tool",
        "[turn 2] tool: shell (ok): ran a command",
        "[turn 2] assistant: history=3",
    ]
