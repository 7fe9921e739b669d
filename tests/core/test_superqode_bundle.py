"""harness_core.superqode_bundle in process: a session of ours as a v1 bundle and back - every
type of ours comes back as itself (v1's names, or ``adapter.<type>``), ids and order kept."""

from __future__ import annotations

import anyio
from harness_hookspecs import Usage

from harness_core import Controller, Result, harness, plugins_from
from harness_core.superqode_bundle import bundle_to_session, export_superqode


@harness("reviewer", features=("resume", "usage"))
async def reviewer(message, session):
    return Result(f"review: {message.content}", usage=Usage(input_tokens=10, output_tokens=2))


def test_our_session_goes_to_v1_and_back(tmp_path):
    async def run():
        async with Controller(
            plugins=plugins_from([reviewer]), ledger="memory:", state_dir=tmp_path
        ) as c:
            ref = await c.open_session(harness="reviewer", workspace=str(tmp_path))
            await c.run_turn(ref, "the diff")
            await c.checkpoint(ref)
            return c.ledger.events(ref.session_id), export_superqode(
                c.ledger, ref.session_id, frozenset({"resume", "usage"})
            )

    ours, bundle = anyio.run(run)
    caps = bundle["descriptor"]["capabilities"]
    assert caps["resume"] and caps["usage"] and caps["checkpoint"]
    assert not caps["steer"] and not caps["cancel"] and not caps["native_export"]
    turn, checkpoint_run = bundle["runs"]
    assert [e["type"] for e in turn["events"]] == [
        "run.started",
        "message.created",  # v1's user message
        "message.created",
        "adapter.usage",
        "run.completed",
    ]
    assert [e["type"] for e in checkpoint_run["events"]] == [
        "run.started",
        "checkpoint.created",
        "run.completed",
    ]
    assert turn["status"] == "succeeded" and turn["prompt_preview"] == "the diff"
    record, back = bundle_to_session(bundle)
    assert record.session_id == ours[0].session_id
    turn_events = [e for e in ours if e.turn_id is not None]
    kept = [e for e in back if e.turn_id == turn["run_id"]]
    assert [e.type for e in kept] == [
        "turn.started",
        "message.completed",
        *[e.type for e in turn_events[1:]],
    ]
    assert [e.payload for e in kept[2:]] == [e.payload for e in turn_events[1:]]
    assert [e.event_id for e in kept][2:] == [e.event_id for e in turn_events[1:]]
    usage = next(e.payload for e in back if e.type == "usage")
    assert usage.usage.input_tokens == 10 and usage.usage.output_tokens == 2
    (checkpoint,) = [e for e in back if e.type == "checkpoint.created"]
    assert checkpoint.payload.checkpoint_id == next(
        e.payload.checkpoint_id for e in ours if e.type == "checkpoint.created"
    )
