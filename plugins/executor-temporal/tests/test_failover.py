"""Worker loss: SIGKILL the worker running a turn; the turn completes on the other worker."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.client import TemporalController
from executor_temporal.shapes import ATTEMPT_STARTED, ExecutorOptions
from temporal_workers import WorkerProcess, alive, ancestors, program_group, program_pid
from temporalio.client import Client

from harness_core.testing.processes import group_members

HEARTBEAT_TIMEOUT = 2.0
#: The 10-step turn: short enough that its whole rerun fits in the bound (the takeover itself
#: takes ~3.2-3.8 s here: Temporal notices the silent worker ~1.2-1.8 s after the heartbeat
#: timeout), long enough that the SIGKILL after 3 deltas lands before the attempt could finish.
STEPS, STEP_DELAY = 10, 0.05


def test_sigkill_of_the_running_worker_completes_the_turn_on_the_other(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config, pid_dir
):
    outcome = failover_on_two_workers(
        temporal_address, postgresql_ledger_url, tmp_path, workspace, steps_config, pid_dir
    )
    events, turn_id, summary, restarted_after, took, program_gone_after, signals = outcome
    print(f"failover: program gone {program_gone_after:.2f} s after the SIGKILL, turn restarted "
          f"after {restarted_after:.2f} s, completed after {took:.2f} s")  # fmt: skip
    assert summary.status == "completed" and summary.attempt == 2, summary
    # the other worker took the turn over and completed it (running the whole 10-step turn
    # again) soon after the heartbeat timeout (~3.5 s here when quiet; the margin is for a
    # loaded CI machine): the heartbeat noticed the loss, not a minutes-long activity timeout
    assert restarted_after <= took <= HEARTBEAT_TIMEOUT + 8.0, (restarted_after, took)
    assert program_gone_after is not None and program_gone_after <= 1.0, program_gone_after
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))  # gap-free
    turn = [e for e in events if e.turn_id is not None]
    assert {e.turn_id for e in turn} == {turn_id}
    types = [e.type for e in turn]
    assert types.count("turn.started") == 1 and types.count("turn.restarted") == 1
    # The new worker's resume kept the lost attempt open for its retry: one terminal, last.
    terminals = [e for e in turn if e.type in ("turn.completed", "turn.failed", "turn.cancelled")]
    assert [e.type for e in terminals] == ["turn.completed"], types
    assert types[-1] == "turn.completed"
    # no write from the dead worker's epoch after the takeover: epochs never go back in sequence
    # order, and the retry writes under a newer epoch than the lost attempt
    epochs = writer_epochs(postgresql_ledger_url, events[0].session_id)[: len(events)]
    assert epochs == sorted(epochs), epochs
    by_sequence = dict(zip([e.sequence for e in events], epochs, strict=True))
    restarted_event = next(e for e in turn if e.type == "turn.restarted")
    started_event = next(e for e in turn if e.type == "turn.started")
    assert by_sequence[restarted_event.sequence] > by_sequence[started_event.sequence]
    assert all(by_sequence[e.sequence] == by_sequence[restarted_event.sequence]
               for e in turn if e.sequence > restarted_event.sequence)  # fmt: skip
    # the retry's worker voided what the lost attempt may have left pending (approvals)
    assert signals == [("attempt_started", turn_id)], signals
    restarted = types.index("turn.restarted")
    assert types[:restarted].count("message.delta") >= 3  # the dead attempt's committed deltas
    assert types[restarted:].count("message.delta") == STEPS  # the retry ran the whole turn


def failover_on_two_workers(address, ledger_url, tmp_path, workspace, steps_config, pid_dir,
                            max_attempts=2):  # fmt: skip
    """Start workers ``a`` and ``b`` on a fresh queue, run :func:`failover`, stop them both."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = [WorkerProcess(name, address, queue, ledger_url, tmp_path) for name in ("a", "b")]
    try:
        for worker in workers:
            worker.wait_ready()
        return anyio.run(failover, address, ledger_url, queue, workers, workspace, steps_config,
                         pid_dir, max_attempts)  # fmt: skip
    finally:
        for worker in workers:
            worker.stop()


def writer_epochs(ledger_url: str, session_id: str) -> list[int]:
    import psycopg

    with psycopg.connect(ledger_url) as connection:
        rows = connection.execute(
            "SELECT writer_epoch FROM ledger_events WHERE session_id = %s ORDER BY sequence",
            (session_id,),
        ).fetchall()
    return [int(row[0]) for row in rows]


async def failover(address, ledger_url, queue, workers, workspace, steps_config, pid_dir,
                   max_attempts=2):  # fmt: skip
    client = await Client.connect(address)
    options = ExecutorOptions(heartbeat_timeout=HEARTBEAT_TIMEOUT, max_attempts=max_attempts)
    async with TemporalController(
        client, ledger=ledger_url, task_queue=queue, options=options
    ) as controller:
        ref = await controller.open_session(
            harness="stdio-jsonl", workspace=workspace, config=steps_config
        )
        killed_at = program_gone_after = restarted_after = None
        async with controller.turn(ref, f"steps {STEPS} {STEP_DELAY}") as turn:
            deltas = 0
            async for event in turn:
                deltas += event.type == "message.delta"
                if event.type == "turn.restarted":
                    restarted_after = time.monotonic() - killed_at
                if deltas == 3 and killed_at is None:
                    program = program_pid(pid_dir)
                    victim = next(w for w in workers if w.pid in ancestors(program))
                    group = program_group(program)
                    os.kill(victim.pid, signal.SIGKILL)
                    killed_at = time.monotonic()
                    gone = False
                    while not gone and time.monotonic() - killed_at < 5:
                        await anyio.sleep(0.02)
                        gone = not (alive(program) or group_members(group))
                    if gone:  # the program and everything in its process group
                        program_gone_after = time.monotonic() - killed_at
                    if max_attempts == 1:
                        break  # no retry will come: leave the tail (the update still answers)
            took = time.monotonic() - killed_at
            summary = await turn.result()
        if max_attempts == 1:  # the session stays usable: the next turn runs on the survivor
            following = await controller.run_turn(ref, "after the loss")
            assert following.status == "completed", following
        events = controller.events(ref.session_id)
        await controller.close_session(ref)
        history = await client.get_workflow_handle(ref.session_id).fetch_history()
        signals = [
            (signal.signal_name, json.loads(signal.input.payloads[0].data))
            for signal in (e.workflow_execution_signaled_event_attributes for e in history.events)
            if signal.signal_name == ATTEMPT_STARTED
        ]
        return events, turn.turn_id, summary, restarted_after, took, program_gone_after, signals


def test_a_turn_whose_attempts_are_all_lost_fails_as_interrupted(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config, pid_dir
):
    outcome = failover_on_two_workers(
        temporal_address, postgresql_ledger_url, tmp_path, workspace, steps_config, pid_dir,
        max_attempts=1,
    )  # fmt: skip
    events, turn_id, summary, _, _, program_gone_after, signals = outcome
    assert signals == []  # no retry
    assert (summary.status, summary.reason, summary.attempt) == ("failed", "interrupted", 1)
    assert program_gone_after is not None and program_gone_after <= 1.0
    lost = [e.type for e in events if e.turn_id == turn_id]
    assert "turn.restarted" not in lost  # not retried (max_attempts=1)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))


def test_sigkill_inside_the_local_start_window_completes_the_turn_on_the_other(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config, pid_dir
):
    """A turn nobody streams starts inside the workflow task (``start_turn``); the worker dies
    before the window ends: no activity heartbeats yet, so Temporal notices by the workflow
    task timeout (10 s) and runs the task on the other worker, whose ``run_turn`` finds the
    turn open in the ledger and runs it as attempt 2 under the same turn id."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = [
        WorkerProcess(name, temporal_address, queue, postgresql_ledger_url, tmp_path)
        for name in ("a", "b")
    ]

    async def body():
        client = await Client.connect(temporal_address)
        options = ExecutorOptions(heartbeat_timeout=HEARTBEAT_TIMEOUT, local_start=5.0)
        async with TemporalController(
            client, ledger=postgresql_ledger_url, task_queue=queue, options=options
        ) as controller:
            ref = await controller.open_session(
                harness="stdio-jsonl", workspace=workspace, config=steps_config
            )
            summaries = []
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: _run(controller, ref, summaries))
                while not any(pid_dir.iterdir()):  # the program started: the window runs
                    await anyio.sleep(0.02)
                program = program_pid(pid_dir)
                victim = next(w for w in workers if w.pid in ancestors(program))
                os.kill(victim.pid, signal.SIGKILL)
                killed_at = time.monotonic()
            took = time.monotonic() - killed_at
            events = controller.events(ref.session_id)
            await controller.close_session(ref)
            return summaries[0], events, took, alive(program)

    try:
        for worker in workers:
            worker.wait_ready()
        summary, events, took, program_alive = anyio.run(body)
    finally:
        for worker in workers:
            worker.stop()
    print(f"failover in the window: completed {took:.2f} s after the SIGKILL")
    assert summary.status == "completed" and summary.attempt == 2, summary
    assert took <= 10.0 + 1.0 + STEPS * 0.2 + 8.0, took  # task timeout + sticky + rerun + margin
    assert not program_alive
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))  # gap-free
    turn = [e for e in events if e.turn_id is not None]
    assert {e.turn_id for e in turn} == {summary.turn_id}
    types = [e.type for e in turn]
    assert types.count("turn.started") == 1 and types.count("turn.restarted") == 1
    assert [t for t in types if t in ("turn.completed", "turn.failed", "turn.cancelled")] == [
        "turn.completed"
    ]
    assert types[-1] == "turn.completed"
    assert types[types.index("turn.restarted") :].count("message.delta") == STEPS


async def _run(controller, ref, summaries) -> None:
    summaries.append(await controller.run_turn(ref, f"steps {STEPS} 0.2"))
