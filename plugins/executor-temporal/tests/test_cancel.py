"""Cancel through the workflow, the next turn, refusals, continue-as-new, replay, turns that
start inside the workflow task (``ExecutorOptions.local_start``): a short turn ends there (no
``run_turn`` activity), a longer one goes on as ``run_turn`` on the same worker (one attempt,
no resume), a cancel asked meanwhile reaches it, and ``local_start=0`` keeps every turn an
activity (in-process worker on the dev server, PostgreSQL ledger)."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest
from executor_temporal.activities import SessionActivities
from executor_temporal.client import TemporalController
from executor_temporal.shapes import RUN_TURN, ExecutorOptions
from executor_temporal.worker import build_worker
from executor_temporal.workflow import SessionWorkflow
from harness_hookspecs import HarnessError
from temporalio.client import Client
from temporalio.worker import Replayer

from harness_core.testing.processes import alive, group_members

sys.path.insert(0, str(Path(__file__).resolve().parent))
from temporal_workers import program_group, program_pid


async def with_worker(
    address, ledger_url, tmp_path: Path, body, options=None, plugins=None, **controller_kw
):
    """Run ``body(controller, client, task_queue)`` with one in-process worker."""
    client = await Client.connect(address)
    queue = f"q-{uuid.uuid4().hex[:8]}"
    activities = SessionActivities(
        ledger=ledger_url, state_dir=tmp_path / "state-w", plugins=plugins
    )
    controller = TemporalController(
        client, ledger=ledger_url, task_queue=queue, options=options, **controller_kw
    )
    async with activities, build_worker(client, activities, task_queue=queue), controller:
        return await body(controller, client, queue)


@pytest.fixture
def in_steps_session(temporal_address, postgresql_ledger_url, tmp_path, workspace, steps_config):
    """``in_steps_session(body, options=None)``: with one worker, open a stdio-jsonl steps session,
    run ``body(controller, client, ref)`` and return what it returns; then replay the session's
    workflow (no nondeterminism)."""

    def run(body, options=None):
        async def in_session(controller, client, queue):
            ref = await controller.open_session(
                harness="stdio-jsonl", workspace=workspace, config=steps_config
            )
            return ref.session_id, await body(controller, client, ref)

        session_id, result = anyio.run(
            with_worker, temporal_address, postgresql_ledger_url, tmp_path, in_session, options
        )
        replay_all(temporal_address, [session_id])
        return result

    return run


def pids_gone(pid_dir: Path) -> bool:
    return all(not alive(int(p.name.rsplit(".", 1)[1])) for p in pid_dir.iterdir())


def test_cancel_is_recorded_within_a_second_and_the_next_turn_runs(in_steps_session, pid_dir):
    async def body(controller, client, ref):
        group = None
        async with controller.turn(ref, "steps 100 0.1") as turn:
            async for event in turn:
                if event.type == "message.delta" and group is None:  # cancel at the first
                    group = program_group(program_pid(pid_dir))
                    asked = time.monotonic()
                    await controller.cancel_turn(ref, turn.turn_id)
                if event.type == "turn.cancelled":
                    cancelled_after = time.monotonic() - asked
            summary = await turn.result()
        print(f"cancel: turn.cancelled in the ledger {cancelled_after:.3f} s after the signal")
        assert summary.status == "cancelled", summary
        assert cancelled_after < 1.0, cancelled_after
        # the turn's program and its whole process group are gone within a second
        while group_members(group) or not pids_gone(pid_dir):
            assert time.monotonic() - asked < 1.0, group_members(group)
            await anyio.sleep(0.02)
        following = await controller.run_turn(ref, "hello again")
        assert following.status == "completed", following
        events = controller.events(ref.session_id)
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        terminals = [
            e.type for e in events if e.type.startswith("turn.") and e.type != "turn.started"
        ]
        assert terminals == ["turn.cancelled", "turn.completed"]
        assert next(e for e in events if e.type == "turn.cancelled").payload.by == "host"
        # refusals: a turn while one runs, then after close
        async with controller.turn(ref, "steps 20 0.05") as running:
            with pytest.raises(HarnessError) as refused:
                await controller.run_turn(ref, "second at once")
            assert refused.value.reason == "turn-active"
            async for _ in running:
                pass
        await controller.close_session(ref)
        await controller.close_session(ref)  # idempotent
        with pytest.raises(HarnessError) as closed:
            await controller.run_turn(ref, "after close")
        assert closed.value.reason == "session-closed"
        assert controller.events(ref.session_id)[-1].type == "session.closed"
        await controller.close_session(ref)  # also once the workflow has completed

    in_steps_session(body)


def test_continue_as_new_keeps_the_session(in_steps_session):
    async def body(controller, client, ref):
        for n in range(3):
            summary = await controller.run_turn(ref, f"turn {n}")
            assert summary.status == "completed", summary
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{ref.session_id}'")]
        await controller.close_session(ref)
        return len(runs)

    runs = in_steps_session(body, ExecutorOptions(turns_per_run=1))
    assert runs >= 3  # one run per turn (continue-as-new), the last one still open then


def replay_all(address: str, workflow_ids: list[str]) -> None:
    """Temporal's Replayer replays every run of these workflows: no nondeterminism."""

    async def replay() -> int:
        client = await Client.connect(address)
        query = " OR ".join(f"WorkflowId = '{w}'" for w in workflow_ids)
        histories = client.list_workflows(query).map_histories()
        results = await Replayer(workflows=[SessionWorkflow]).replay_workflows(
            histories, raise_on_replay_failure=False
        )
        failures = {run: str(error) for run, error in results.replay_failures.items()}
        assert not failures, failures
        return len(results.replay_failures) + sum(1 for _ in workflow_ids)

    anyio.run(replay)


def test_a_refused_turn_raises_like_locally_and_is_not_retried(in_steps_session):
    async def body(controller, client, ref):
        before = len(controller.events(ref.session_id))
        with pytest.raises(HarnessError) as refused:
            await controller.run_turn(ref, "")  # an empty prompt: invalid-request
        assert refused.value.reason == "invalid-request"
        # nothing of that turn was recorded (the worker's resume may add session.resumed)
        assert all(e.turn_id is None for e in controller.events(ref.session_id)[before:])
        history = await client.get_workflow_handle(ref.session_id).fetch_history()
        started = [
            e for e in history.events if e.HasField("activity_task_started_event_attributes")
        ]
        attempts = [e.activity_task_started_event_attributes.attempt for e in started]
        local = [e.marker_recorded_event_attributes.marker_name for e in history.events
                 if e.HasField("marker_recorded_event_attributes")]  # fmt: skip
        # open, then the refused turn once, as the start_turn local activity (the session is
        # held where it opened): not retried, and no run_turn activity after it
        assert attempts == [1]
        assert local.count("core_local_activity") == 1, local
        following = await controller.run_turn(ref, "still usable")
        assert following.status == "completed", following
        await controller.close_session(ref)

    in_steps_session(body)


def test_a_session_that_cannot_open_is_refused_and_its_workflow_ends(
    temporal_address, postgresql_ledger_url, tmp_path, workspace
):
    async def body(controller, client, queue):
        with pytest.raises(HarnessError) as refused:
            await controller.open_session(harness="no-such-harness", workspace=workspace)
        assert refused.value.reason == "invalid-request"
        for _ in range(100):  # visibility catches up within moments
            runs = [w async for w in client.list_workflows(f"TaskQueue = '{queue}'")]
            if runs and runs[0].status is not None and runs[0].status.name == "COMPLETED":
                break
            await anyio.sleep(0.05)
        assert [w.status.name for w in runs if w.status] == ["COMPLETED"]

    anyio.run(with_worker, temporal_address, postgresql_ledger_url, tmp_path, body)


def test_a_cancelled_run_turn_cancels_the_turn_and_returns_once_it_ended(in_steps_session):
    """run_turn with nobody watching is one update call; cancelling its caller cancels the turn
    on the worker and waits for the terminal, as leaving ``turn()`` early does."""

    async def body(controller, client, ref):
        with anyio.move_on_after(1.0) as scope:
            await controller.run_turn(ref, "steps 60 0.05")
        assert scope.cancelled_caught
        events = controller.events(ref.session_id)
        assert events[-1].type == "turn.cancelled" and events[-1].payload.by == "host", events[-1]
        following = await controller.run_turn(ref, "hello again")
        assert following.status == "completed", following
        await controller.close_session(ref)

    in_steps_session(body)


def test_a_turn_id_sent_again_gets_the_ended_turns_result_and_runs_nothing(in_steps_session):
    """The worker holds the session between turns and reads it only for a turn id it has seen:
    an ended turn's id sent again (a client's retry) gets that turn's result, nothing reruns."""

    async def body(controller, client, ref):
        first = await controller.run_turn(ref, "first", turn_id="turn_again")
        await controller.run_turn(ref, "second")
        before = controller.events(ref.session_id)
        again = await controller.run_turn(ref, "first once more", turn_id="turn_again")
        assert (again.status, again.last_sequence) == ("completed", first.last_sequence), again
        assert controller.events(ref.session_id) == before
        await controller.close_session(ref)

    in_steps_session(body)


async def turn_kinds(client, session_id: str) -> list[str]:
    """What ran the session's turns, in history order: ``local`` (a start_turn local
    activity's marker) or ``activity`` (a run_turn activity started)."""
    history = await client.get_workflow_handle(session_id).fetch_history()
    kinds = []
    scheduled: dict[int, str] = {}
    for event in history.events:
        if event.HasField("marker_recorded_event_attributes"):
            if event.marker_recorded_event_attributes.marker_name == "core_local_activity":
                kinds.append("local")
        elif event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            attributes = event.activity_task_started_event_attributes
            if scheduled.get(attributes.scheduled_event_id) == RUN_TURN:
                kinds.append(f"activity {attributes.attempt}")
    return kinds


async def cancel_after(controller, ref, prompt: str, seconds: float):
    """Run ``prompt`` as a turn nobody streams; cancel it ``seconds`` into it."""
    turn_id = f"turn_{uuid.uuid4().hex[:12]}"
    summaries = []

    async def run() -> None:
        summaries.append(await controller.run_turn(ref, prompt, turn_id=turn_id))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await anyio.sleep(seconds)
        await controller.cancel_turn(ref, turn_id)
    return summaries[0]


def assert_cancelled_once(controller, ref, summary, *, steps: int) -> None:
    assert summary.status == "cancelled", summary
    events = controller.events(ref.session_id)
    turn = [e for e in events if e.turn_id == summary.turn_id]
    assert [e.type for e in turn if e.type.startswith("turn.")] == [
        "turn.started",
        "turn.cancelled",
    ]
    assert turn[-1].payload.by == "host"
    assert len([e for e in turn if e.type == "message.delta"]) < steps  # not run to its end
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))


def test_short_turns_end_in_the_workflow_task_longer_ones_go_on_as_run_turn(
    in_steps_session, pid_dir
):
    async def body(controller, client, ref):
        short = await controller.run_turn(ref, "hello")
        assert short.status == "completed", short
        assert await turn_kinds(client, ref.session_id) == ["local"]

        longer = await controller.run_turn(ref, "steps 8 0.25")  # 2 s: past the window
        assert longer.status == "completed" and longer.attempt == 1, longer
        assert await turn_kinds(client, ref.session_id) == ["local", "local", "activity 1"]
        events = controller.events(ref.session_id)
        turn = [e for e in events if e.turn_id == longer.turn_id]
        assert [e.type for e in turn].count("turn.started") == 1
        assert not [e for e in turn if e.type == "turn.restarted"]
        assert [e.payload.text for e in turn if e.type == "message.delta"] == [
            f"step {i} " for i in range(8)
        ]
        assert not [e for e in events if e.type == "session.resumed"]  # stayed on the worker

        # a turn the caller streams is a run_turn activity (its events come as they are made)
        async with controller.turn(ref, "hello streamed") as streamed:
            assert [e.type async for e in streamed][-1] == "turn.completed"
            assert (await streamed.result()).status == "completed"  # the activity's end too
        kinds = await turn_kinds(client, ref.session_id)
        assert kinds == ["local", "local", "activity 1", "activity 1"]

        # a cancel asked in the window reaches the turn once run_turn follows it
        cancelled = await cancel_after(controller, ref, "steps 100 0.1", 0.5)
        assert_cancelled_once(controller, ref, cancelled, steps=100)
        after = await controller.run_turn(ref, "hello again")
        assert after.status == "completed", after
        await controller.close_session(ref)

    in_steps_session(body, ExecutorOptions(local_start=1.0))
    assert pids_gone(pid_dir)


def test_a_cancel_the_workflow_saw_before_run_turn_was_scheduled_reaches_the_turn(
    in_steps_session, pid_dir
):
    """A window longer than the workflow task's heartbeat (8 s of its 10 s timeout): the
    cancel signal is delivered while start_turn still waits, so the workflow has it before it
    schedules run_turn, and cancelling an activity scheduled in the same workflow task would
    never reach the worker: the cancel goes with the activity."""

    async def body(controller, client, ref):
        cancelled = await cancel_after(controller, ref, "steps 200 0.1", 2.0)
        assert_cancelled_once(controller, ref, cancelled, steps=200)
        await controller.close_session(ref)

    in_steps_session(body, ExecutorOptions(local_start=9.0))
    assert pids_gone(pid_dir)


def test_local_start_zero_runs_every_turn_as_an_activity(in_steps_session):
    async def body(controller, client, ref):
        for prompt in ("hello", "steps 2 0.1"):
            summary = await controller.run_turn(ref, prompt)
            assert summary.status == "completed", summary
        assert await turn_kinds(client, ref.session_id) == ["activity 1", "activity 1"]
        await controller.close_session(ref)

    in_steps_session(body, ExecutorOptions(local_start=0))
