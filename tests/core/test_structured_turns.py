"""Structured turn output on a one-function harness: validated decisions on the terminal event,
malformed answers retried in the same session and turn, ``invalid-output`` when retries run out,
exactly one terminal per turn; and the host loop linking each iteration by parent_event_id."""

from __future__ import annotations

import json

import anyio
import pytest
from harness_hookspecs import HarnessError

from harness_core import harness
from harness_core.host_loop import STEP_SCHEMA, host_loop

SCHEMA = STEP_SCHEMA


def scripted(name, answers):
    """A harness answering from ``answers`` in order; it records every prompt it is given."""
    seen: list[str] = []
    queue = list(answers)

    @harness(name)
    async def run(message, session):
        seen.append(message.content)
        return queue.pop(0)

    return run, seen


def run_turns(make_controller, workspace, plugin, prompts, **turn_kwargs):
    async def main():
        async with make_controller(plugin) as c:
            ref = await c.open_session(harness=plugin.__harness_adapter__.name, workspace=workspace)
            results = [await c.run_turn(ref, p, **turn_kwargs) for p in prompts]
            return results, c.events(ref.session_id)

    return anyio.run(main)


def terminals(events):
    return [e for e in events if e.terminal]


def test_a_valid_answer_is_the_terminal_events_output(make_controller, workspace):
    plugin, seen = scripted("s-valid", ['{"step": "done", "answer": "42"}'])
    [result], events = run_turns(
        make_controller, workspace, plugin, ["decide"], output_schema=SCHEMA
    )
    assert result.ok and result.output == {"step": "done", "answer": "42"}
    [terminal] = terminals(events)
    assert terminal.type == "turn.completed"
    assert terminal.payload.output == {"step": "done", "answer": "42"}
    # prompt-and-validate: the function saw the schema, the ledger keeps the host's prompt
    assert '"required":["step"]' in seen[0]
    started = next(e for e in events if e.type == "turn.started")
    assert started.payload.prompt == "decide"


def test_a_malformed_answer_is_retried_then_accepted(make_controller, workspace):
    plugin, seen = scripted(
        "s-retry", ['{"step": "maybe"}', '{"step": "actions", "actions": ["ls"]}']
    )
    [result], events = run_turns(
        make_controller, workspace, plugin, ["decide"], output_schema=SCHEMA
    )
    assert result.ok and result.output == {"step": "actions", "actions": ["ls"]}
    assert len(seen) == 2 and "did not match the required JSON Schema" in seen[1]
    assert "'maybe' is not one of" in seen[1]  # the model is told what was wrong
    retries = [e for e in events if e.type == "status"]
    assert [e.payload.message for e in retries] == [
        "the answer did not match the output schema (enum at $.step); retrying (1 of 2)"
    ]
    assert len(terminals(events)) == 1 and events[-1].type == "turn.completed"
    # each answer's verdict: one failed (the fixed keyword and path, not the answer), one passed
    verdicts = [e.payload for e in events if e.type == "output.validated"]
    assert [(v.attempt, v.verdict, v.reason) for v in verdicts] == [
        (1, "failed", "enum at $.step"),
        (2, "passed", None),
    ]
    types = [e.type for e in events]
    assert types.index("output.validated") < types.index("status")  # verdict, then the retry
    assert types[-2:] == ["output.validated", "turn.completed"]
    # one turn: every event carries its id
    assert {e.turn_id for e in events if e.turn_id} == {result.turn_id}


@pytest.mark.parametrize(
    "answers",
    [['{"step": "nope"}'] * 3, ["just words, no JSON"] * 3],
    ids=["always-malformed", "text-only"],
)
def test_retries_run_out_as_invalid_output(make_controller, workspace, answers):
    plugin, seen = scripted("s-bad", answers)
    [result], events = run_turns(
        make_controller, workspace, plugin, ["decide"], output_schema=SCHEMA, output_retries=2
    )
    assert result.status == "failed" and result.reason == "invalid-output"
    assert len(seen) == 3  # the answer and two retries
    [terminal] = terminals(events)
    assert terminal is events[-1] and terminal.payload.reason == "invalid-output"
    assert terminal.payload.hint.startswith("3 attempts; last: ")
    # the answers are the assistant's messages; the runtime's own events never quote them
    runtime = repr([e for e in events if e.type in ("status", "turn.failed", "output.validated")])
    assert "nope" not in runtime and "just words" not in runtime
    verdicts = [e.payload for e in events if e.type == "output.validated"]
    assert [(v.attempt, v.verdict) for v in verdicts] == [
        (1, "failed"),
        (2, "failed"),
        (3, "failed"),
    ]
    assert all(v.reason in ("enum at $.step", "the answer is not JSON") for v in verdicts)


def test_zero_retries_fail_at_once(make_controller, workspace):
    plugin, seen = scripted("s-zero", ['{"step": 1}'])
    [result], _ = run_turns(
        make_controller, workspace, plugin, ["decide"], output_schema=SCHEMA, output_retries=0
    )
    assert result.reason == "invalid-output" and len(seen) == 1


def test_a_schema_that_is_not_a_schema_is_refused_before_the_turn(make_controller, workspace):
    plugin, seen = scripted("s-schema", ["{}"])

    async def main():
        async with make_controller(plugin) as c:
            ref = await c.open_session(harness="s-schema", workspace=workspace)
            with pytest.raises(HarnessError) as raised:
                await c.run_turn(ref, "decide", output_schema={"type": 12})
            assert raised.value.reason == "invalid-request"
            assert [e.type for e in c.events(ref.session_id)] == ["session.opened"]

    anyio.run(main)
    assert seen == []


def test_a_turn_without_a_schema_has_no_output(make_controller, workspace):
    plugin, _ = scripted("s-none", ['{"step": "done"}'])
    [result], events = run_turns(make_controller, workspace, plugin, ["hi"])
    assert result.ok and result.output is None and events[-1].payload.output is None


def test_three_iteration_host_loop_links_each_step(make_controller, workspace):
    plugin, seen = scripted(
        "s-loop",
        [
            '{"step": "actions", "actions": ["count files"]}',
            '{"step": "actions", "actions": ["read README"]}',
            '{"step": "done", "answer": "all good"}',
        ],
    )
    executed: list[list[str]] = []

    async def execute(decision):
        executed.append(decision["actions"])
        return {"results": [f"{a}: ok" for a in decision["actions"]]}

    async def main():
        async with make_controller(plugin) as c:
            ref = await c.open_session(harness="s-loop", workspace=workspace)
            loop = await host_loop(c, ref, "tidy up", schema=SCHEMA, execute=execute)
            return loop, c.events(ref.session_id)

    loop, events = anyio.run(main)
    assert loop.status == "done" and loop.decision == {"step": "done", "answer": "all good"}
    assert executed == [["count files"], ["read README"]]
    started = [e for e in events if e.type == "turn.started"]
    completed = [e for e in events if e.type == "turn.completed"]
    assert len(started) == len(completed) == 3
    assert started[0].parent_event_id is None
    # each turn's input names the decision it answers
    assert [s.parent_event_id for s in started[1:]] == [c.event_id for c in completed[:2]]
    assert json.loads(started[1].payload.prompt.split("\n", 1)[1]) == {
        "results": ["count files: ok"]
    }
    assert "count files: ok" in seen[1]


def test_the_host_loop_stops_on_its_budget(make_controller, workspace):
    plugin, _ = scripted("s-budget", ['{"step": "actions", "actions": ["again"]}'] * 3)

    async def main():
        async with make_controller(plugin) as c:
            ref = await c.open_session(harness="s-budget", workspace=workspace)
            return await host_loop(
                c, ref, "go", schema=SCHEMA, execute=lambda d: "done", max_iterations=2
            )

    loop = anyio.run(main)
    assert loop.status == "budget" and len(loop.steps) == 2
