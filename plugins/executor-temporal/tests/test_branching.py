"""Steer, fork, checkpoint and rewind through Temporal: the host's ``TemporalController``
asks the session's workflow, a worker's local controller does it (in-process worker on the dev
server, PostgreSQL ledger, one-function harnesses that show the conversation they see)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import anyio
import pytest
from executor_temporal.activities import SessionActivities
from executor_temporal.client import TemporalController
from executor_temporal.steering import POLL_AFTER
from executor_temporal.worker import build_worker
from harness_hookspecs import HarnessError
from temporalio.client import Client, WorkflowExecutionStatus

from harness_core import harness, plugins_from
from harness_core.testing.branching import shaped_reply, tree_hash

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cancel import replay_all

FEATURES = ("resume", "cancel", "steer", "fork", "checkpoint")


@harness("temporal-shaped", features=FEATURES)
async def shaped(message, session):
    """Answers with the conversation it sees; "wait" waits for a steer; "write NAME TEXT"."""
    return await shaped_reply(message, session)


@harness("temporal-plain", features=("resume", "cancel"))
async def plain(message, session):
    """No steer, no fork: "sleep" runs long enough to be steered."""
    if message.content == "sleep":
        await anyio.sleep(POLL_AFTER + 1.5)
    return "ok"


def of_type(events, *wanted):
    return [e for e in events if e.type in wanted]


@pytest.fixture
def on_temporal(temporal_address, postgresql_ledger_url, tmp_path):
    """``on_temporal(body)``: run ``body(controller, client)`` with one in-process worker that
    knows both harnesses and takes checkpoints around each turn; then replay every workflow
    the body started (``body`` returns the session ids it used first)."""

    def run(body):
        async def main():
            client = await Client.connect(temporal_address)
            queue = f"q-{uuid.uuid4().hex[:8]}"
            activities = SessionActivities(
                ledger=postgresql_ledger_url,
                state_dir=tmp_path / "state-w",
                plugins=plugins_from([shaped, plain], entry_points=True),
                checkpoints=True,
            )
            controller = TemporalController(client, ledger=postgresql_ledger_url, task_queue=queue)
            async with activities, build_worker(client, activities, task_queue=queue), controller:
                return await body(controller, client)

        sessions, result = anyio.run(main)
        replay_all(temporal_address, sessions)
        return result

    return run


async def run(controller, ref, prompt):
    """One turn to its end: its text and events."""
    async with controller.turn(ref, prompt) as turn:
        events = [event async for event in turn]
        summary = await turn.result()
    assert summary.status == "completed", (summary, events)
    return events[-1].payload.text, events


def test_steer_reaches_the_turn_on_the_worker(on_temporal, workspace):
    async def body(controller, client):
        ref = await controller.open_session(harness="temporal-shaped", workspace=workspace)
        with pytest.raises(HarnessError) as no_turn:
            await controller.steer(ref, "nobody listens")
        async with controller.turn(ref, "wait") as turn:
            async for event in turn:
                if event.type == "turn.started":
                    await controller.steer(ref, "use the blue one", turn_id=turn.turn_id)
            summary = await turn.result()
        with pytest.raises(HarnessError) as ended:
            await controller.steer(ref, "too late", turn_id=turn.turn_id)
        other = await controller.open_session(harness="temporal-plain", workspace=workspace)
        async with controller.turn(other, "sleep") as slow:
            with pytest.raises(HarnessError) as unsupported:
                await controller.steer(other, "not here")
            async for _ in slow:
                pass
        for session in (ref, other):
            await controller.close_session(session)
        events = controller.events(ref.session_id)
        return [ref.session_id, other.session_id], (
            no_turn.value, ended.value, unsupported.value, summary, turn.events, events,
            controller.events(other.session_id),
        )  # fmt: skip

    no_turn, ended, unsupported, summary, turn_events, events, other_events = on_temporal(body)
    assert summary.status == "completed"
    kinds = [e.type for e in turn_events]
    assert kinds.count("turn.steered") == 1 and kinds.count("turn.completed") == 1
    steered = of_type(turn_events, "turn.steered")[0]
    assert steered.payload.text == "use the blue one"
    # the running function got the text inside the same turn
    assert turn_events[-1].payload.text.startswith("steered: use the blue one // ")
    assert no_turn.reason == "turn-not-found" and ended.reason == "turn-not-found"
    assert unsupported.reason == "unsupported-feature"
    assert len(of_type(events, "turn.steered")) == 1  # the refusals recorded nothing
    assert not of_type(other_events, "turn.steered")


def test_fork_opens_a_child_with_its_own_workflow(on_temporal, workspace):
    async def body(controller, client):
        parent = await controller.open_session(harness="temporal-shaped", workspace=workspace)
        _, first = await run(controller, parent, "alpha")
        await run(controller, parent, "bravo")
        before = controller.events(parent.session_id)
        with pytest.raises(HarnessError) as unknown:
            await controller.fork(parent, at="evt_not_there")
        with pytest.raises(HarnessError) as bad_field:
            await controller.fork(parent, harness="temporal-plain")
        refused_nothing = controller.events(parent.session_id) == before
        child = await controller.fork(parent, at=first[-1].event_id)
        in_child, _ = await run(controller, child, "charlie")
        in_child_again, _ = await run(controller, child, "echo")
        in_parent, _ = await run(controller, parent, "delta")
        described = await client.get_workflow_handle(child.session_id).describe()
        await controller.close_session(child)
        await controller.close_session(parent)
        return [parent.session_id, child.session_id], (
            parent, child, first, unknown.value, bad_field.value, refused_nothing, in_child,
            in_child_again, in_parent, described.status, controller.events(parent.session_id),
            controller.events(child.session_id),
        )  # fmt: skip

    (parent, child, first, unknown, bad_field, refused_nothing, in_child, in_child_again,
     in_parent, child_status, parent_events, child_events) = on_temporal(body)  # fmt: skip
    assert unknown.reason == "invalid-request" and "evt_not_there" in str(unknown)
    assert bad_field.reason == "invalid-request"
    assert refused_nothing
    assert child.session_id != parent.session_id
    assert child_status == WorkflowExecutionStatus.RUNNING  # its own workflow ran its turns
    assert in_child == "user=alpha;assistant=user=alpha;user=charlie"
    assert "echo" in in_child_again and "bravo" not in in_child_again
    assert "user=bravo" in in_parent and "charlie" not in in_parent
    for side in (parent_events, child_events):
        (forked,) = of_type(side, "session.forked")
        assert forked.payload.parent_session_id == parent.session_id
        assert forked.payload.child_session_id == child.session_id
        assert forked.payload.at_event_id == first[-1].event_id
    assert [e.type for e in child_events[:2]] == ["session.opened", "session.forked"]
    assert child_events[-1].type == "session.closed"


def test_rewind_restores_files_and_conversation(on_temporal, workspace, tmp_path):
    other_ws = tmp_path / "other"
    other_ws.mkdir()

    async def body(controller, client):
        ref = await controller.open_session(harness="temporal-shaped", workspace=workspace)
        Path(workspace, "keep.txt").write_text("before\n")
        hashes = []
        for n in (1, 2, 3):
            hashes.append(tree_hash(workspace))
            await run(controller, ref, f"write f{n}.txt content {n}\n")
        third = tree_hash(workspace)
        events = controller.events(ref.session_id)
        turn_one = of_type(events, "turn.started")[0].turn_id
        start_one = next(
            e.payload.checkpoint_id
            for e in of_type(events, "checkpoint.created")
            if e.payload.reason == "turn-start" and e.payload.turn_id == turn_one
        )
        other = await controller.open_session(harness="temporal-plain", workspace=str(other_ws))
        theirs = await controller.checkpoint(other)
        with pytest.raises(HarnessError) as foreign:
            await controller.rewind(ref, theirs)
        async with controller.turn(ref, "wait") as waiting:
            async for event in waiting:
                if event.type == "turn.started":
                    with pytest.raises(HarnessError) as busy:
                        await controller.rewind(ref, start_one)
                    await controller.steer(ref, "go on")
        unchanged = tree_hash(workspace) == third
        rewound = await controller.rewind(ref, start_one[:16])
        after = tree_hash(workspace)
        again, _ = await run(controller, ref, "again")
        for session in (ref, other):
            await controller.close_session(session)
        return [ref.session_id, other.session_id], (
            hashes, after, unchanged, rewound, again, foreign.value, busy.value, events,
            controller.events(ref.session_id),
        )  # fmt: skip

    hashes, after, unchanged, rewound, again, foreign, busy, before, events = on_temporal(body)
    assert foreign.reason == "invalid-request" and "not a checkpoint of this session" in str(
        foreign
    )
    assert busy.reason == "turn-active"
    assert unchanged  # the refused rewind touched nothing
    assert after == hashes[0]  # byte-for-byte turn 1's start
    assert rewound.conversation and rewound.turns_kept == 0
    assert again == "user=again"  # turns 1-3 (and the steered one) are gone from the harness
    # append-only: what was recorded before the rewind is still there, in order
    assert [e.event_id for e in events[: len(before)]] == [e.event_id for e in before]
    (recorded,) = of_type(events, "session.rewound")
    assert recorded.payload.checkpoint_id == rewound.checkpoint_id
