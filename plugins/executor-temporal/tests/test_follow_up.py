"""The ``run_turn`` that follows a turn past its local-start window goes to the task queue only
the worker that started the turn polls, not to eager activity start (best effort). On a dev
server with eager activity start off (a self-hosted server's default), two ``harness worker``
processes: long turns complete on the worker that started them, one attempt, the harness run
once each; a SIGKILL of that worker during the follow-up fails over to the other as attempt 2;
a SIGTERM inside the window lets the turn finish there within the grace (30 s), or hands it
over, recorded as a worker stop (1 s)."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from executor_temporal.client import TemporalController
from executor_temporal.shapes import RUN_TURN, ExecutorOptions
from executor_temporal.testing import DevServer
from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from temporal_serving import serving
from temporal_workers import WorkerProcess, alive, ancestors

HEARTBEAT_TIMEOUT = 2.0
TERMINALS = ("turn.completed", "turn.failed", "turn.cancelled")


@pytest.fixture(scope="module")
def no_eager_address() -> Iterator[str]:
    """A dev server with eager activity start off (a self-hosted server's default)."""
    yield from serving(DevServer(eager=False))


class Workers:
    """``harness worker`` processes on a fresh task queue: ``a`` at first; ``add_b()`` starts
    the second once the session opened on ``a`` (its workflow tasks stay there, sticky), so
    that its turns start inside the window on ``a`` every time."""

    def __init__(self, address: str, ledger: str, root: Path, extra: dict[str, str]) -> None:
        self.queue = f"q-{uuid.uuid4().hex[:8]}"
        self.started: list[WorkerProcess] = []
        self._args = (address, self.queue, ledger, root)
        self._extra = extra
        self.a = self._start("a")

    def _start(self, name: str) -> WorkerProcess:
        worker = WorkerProcess(name, *self._args, log_format="json", **self._extra)
        self.started.append(worker)
        worker.wait_ready()
        return worker

    def add_b(self) -> WorkerProcess:
        return self._start("b")

    def own_queue(self, worker: WorkerProcess) -> str:
        return str(log_lines(worker)[0]["own_queue"])


@pytest.fixture
def workers(no_eager_address, postgresql_ledger_url, tmp_path: Path, request) -> Iterator[Workers]:
    """``request.param``: the workers' extra flags."""
    pair = Workers(no_eager_address, postgresql_ledger_url, tmp_path,
                   getattr(request, "param", {}))  # fmt: skip
    try:
        yield pair
    finally:
        for worker in pair.started:
            worker.stop()


async def opened(controller: TemporalController, workers: Workers, workspace, steps_config):
    """Open the session with only ``a`` up, then start ``b``."""
    ref = await controller.open_session(
        harness="stdio-jsonl", workspace=workspace, config=steps_config
    )
    await anyio.to_thread.run_sync(workers.add_b)
    return ref


def invocations(pid_dir: Path, turn_id: str) -> list[int]:
    """The pids of the harness processes that ran ``turn_id`` (one file per invocation)."""
    return [int(p.name.rsplit(".", 1)[1]) for p in pid_dir.glob(f"{turn_id}.*")]


def log_lines(worker: WorkerProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in worker.log.read_text().splitlines() if line[:1] == "{"]


async def run_turn_queues(client: Client, session_id: str) -> list[str]:
    """The task queue of every ``run_turn`` the session's workflow scheduled, in order."""
    queues = []
    async for event in client.get_workflow_handle(session_id).fetch_history_events():
        scheduled = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and (
            scheduled.activity_type.name == RUN_TURN
        ):
            queues.append(scheduled.task_queue.name)
    return queues


def assert_one_terminal(events, turn_id: str) -> list[str]:
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))  # gap-free
    types = [e.type for e in events if e.turn_id == turn_id]
    assert [t for t in types if t in TERMINALS] == ["turn.completed"], types
    return types


def test_a_long_turn_is_followed_on_the_worker_that_started_it(
    no_eager_address, postgresql_ledger_url, workers, workspace, steps_config, pid_dir
):
    """Four 1 s turns (past the 0.25 s window), eager start off: each ``run_turn`` goes to the
    starting worker's own queue, and the turn runs once, as attempt 1, on that worker. (With
    the follow-up on the shared queue, either worker could take it; the other would take the
    session over and run the harness again as attempt 2.)"""
    queue, started = workers.queue, workers.started

    async def body():
        client = await Client.connect(no_eager_address)
        options = ExecutorOptions(heartbeat_timeout=HEARTBEAT_TIMEOUT, local_start=0.25)
        async with TemporalController(
            client, ledger=postgresql_ledger_url, task_queue=queue, options=options
        ) as controller:
            ref = await opened(controller, workers, workspace, steps_config)
            summaries = [await controller.run_turn(ref, "steps 5 0.2") for _ in range(4)]
            events = controller.events(ref.session_id)
            queues = await run_turn_queues(client, ref.session_id)
            await controller.close_session(ref)
            return summaries, events, queues

    summaries, events, queues = anyio.run(body)
    ran_on_a = {line["turn_id"] for line in log_lines(workers.a) if line["event"] == "turn.attempt"}
    for summary in summaries:
        assert (summary.status, summary.attempt) == ("completed", 1), summary
        types = assert_one_terminal(events, summary.turn_id)
        assert types.count("turn.started") == 1 and "turn.restarted" not in types
        assert types.count("message.delta") == 5
        pids = invocations(pid_dir, summary.turn_id)
        assert len(pids) == 1, pids  # the harness ran once
        assert summary.turn_id in ran_on_a  # where it started, and only there
    for worker in started:
        assert not [line for line in log_lines(worker) if line["event"] == "turn.failover"]
    assert not [line for line in log_lines(started[1]) if line["event"] == "turn.attempt"]
    assert queues == [workers.own_queue(workers.a)] * 4, queues


async def interrupted_turn(address, ledger_url, workers, workspace, steps_config, pid_dir, *,
                           local_start: float, prompt: str, when, signum: int):  # fmt: skip
    """Run ``prompt`` unstreamed in a session opened on ``a``; once ``when(client, session_id)``
    returns, send ``signum`` to the worker running the harness. The summary, the events, the
    run_turn queues, that worker, seconds from the signal to the summary, the harness pid."""
    client = await Client.connect(address)
    options = ExecutorOptions(heartbeat_timeout=HEARTBEAT_TIMEOUT, local_start=local_start)
    async with TemporalController(
        client, ledger=ledger_url, task_queue=workers.queue, options=options
    ) as controller:
        ref = await opened(controller, workers, workspace, steps_config)
        summaries = []

        async def run() -> None:
            summaries.append(await controller.run_turn(ref, prompt))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await when(client, ref.session_id)
            program = next(int(p.name.rsplit(".", 1)[1]) for p in pid_dir.iterdir())
            victim = next(w for w in workers.started if w.pid in ancestors(program))
            os.kill(victim.pid, signum)
            sent = time.monotonic()
        took = time.monotonic() - sent
        events = controller.events(ref.session_id)
        queues = await run_turn_queues(client, ref.session_id)
        await controller.close_session(ref)
        return summaries[0], events, queues, victim, took, program


def test_sigkill_during_the_follow_up_fails_over_as_attempt_2(
    no_eager_address, postgresql_ledger_url, workers, workspace, steps_config, pid_dir
):
    """The worker running the followed turn dies: its ``run_turn`` stops heartbeating, the
    workflow schedules ``run_turn`` on the shared queue, and the other worker runs the turn
    as attempt 2 (same turn id, one terminal, gap-free)."""

    async def following(client: Client, session_id: str) -> None:
        while not await run_turn_queues(client, session_id):  # the follow-up was sent
            await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # it runs on its worker

    summary, events, queues, victim, took, program = anyio.run(
        functools.partial(
            interrupted_turn, no_eager_address, postgresql_ledger_url, workers, workspace,
            steps_config, pid_dir, local_start=0.25, prompt="steps 30 0.2", when=following,
            signum=signal.SIGKILL,
        )
    )  # fmt: skip
    print(f"failover during the follow-up: completed {took:.2f} s after the SIGKILL")
    assert (summary.status, summary.attempt) == ("completed", 2), summary
    assert victim is workers.a
    assert queues == [workers.own_queue(victim), workers.queue], queues
    assert not alive(program)
    types = assert_one_terminal(events, summary.turn_id)
    assert types.count("turn.started") == 1 and types.count("turn.restarted") == 1
    assert types[types.index("turn.restarted") :].count("message.delta") == 30
    assert len(invocations(pid_dir, summary.turn_id)) == 2  # once per attempt
    other = next(w for w in workers.started if w is not victim)
    failover = next(line for line in log_lines(other) if line["event"] == "turn.failover")
    assert (failover["reason"], failover["attempt"]) == ("worker-lost", 2)


@pytest.mark.parametrize(
    "workers", [{"grace": "30"}, {"grace": "1"}], indirect=True, ids=["grace-30", "grace-1"]
)
def test_sigterm_inside_the_window_drains_the_followed_turn(
    no_eager_address, postgresql_ledger_url, workers, workspace, steps_config, pid_dir
):
    """SIGTERM while the turn is inside its (0.5 s) window: the draining worker starts no new
    turn but still polls its own queue, so the follow-up reaches it. Grace 30 s: the turn
    completes there, attempt 1, the harness run once. Grace 1 s: handed over, and the other
    worker runs attempt 2, recorded as a worker stop."""
    grace = float(log_lines(workers.a)[0]["grace"])

    async def started(client: Client, session_id: str) -> None:
        while not any(pid_dir.iterdir()):  # the program started: the window runs
            await anyio.sleep(0.02)

    summary, events, queues, victim, _, _ = anyio.run(
        functools.partial(
            interrupted_turn, no_eager_address, postgresql_ledger_url, workers, workspace,
            steps_config, pid_dir, local_start=0.5, prompt="steps 20 0.25", when=started,
            signum=signal.SIGTERM,
        )
    )  # fmt: skip
    assert victim.process.wait(timeout=60) == 0
    types = assert_one_terminal(events, summary.turn_id)
    victim_log = [line["event"] for line in log_lines(victim)]
    assert "worker.draining" in victim_log and victim_log[-1] == "worker.stopped"
    assert victim is workers.a
    assert queues[0] == workers.own_queue(victim), queues  # followed on its own queue
    if grace == 30.0:
        assert (summary.status, summary.attempt) == ("completed", 1), summary
        assert queues == queues[:1]
        assert "turn.restarted" not in types and types.count("message.delta") == 20
        assert len(invocations(pid_dir, summary.turn_id)) == 1
        assert "turn.finished" in victim_log and "turn.handover" not in victim_log
    else:
        assert (summary.status, summary.attempt) == ("completed", 2), summary
        assert queues[1:] == [workers.queue]
        assert types.count("turn.restarted") == 1 and "turn.cancelled" not in types
        stopped = [e.payload.message for e in events if e.type == "status"]
        assert stopped == ["worker stopped: the turn continues on another worker"]
        other = next(w for w in workers.started if w is not victim)
        failover = next(line for line in log_lines(other) if line["event"] == "turn.failover")
        assert (failover["reason"], failover["attempt"]) == ("worker-stopped", 2)


def test_histories_from_before_own_queues_replay():
    """A history main's code recorded before workers had queues of their own (dev server,
    ``local_start=0.25``: a turn that ended in the window, one followed by ``run_turn`` on the
    shared queue, one cancelled while followed) replays with this code; the changed workflow
    (a new command) does not, so the replayer looks."""
    from executor_temporal.workflow import SessionWorkflow
    from temporal_serving import ChangedWorkflow
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

    recorded = Path(__file__).with_name("histories") / "local-start-before-own-queues.json"
    history = WorkflowHistory.from_json("recorded", recorded.read_text())

    async def replay():
        ours = await Replayer(workflows=[SessionWorkflow]).replay_workflow(
            history, raise_on_replay_failure=False
        )
        changed = await Replayer(
            workflows=[ChangedWorkflow], workflow_runner=UnsandboxedWorkflowRunner()
        ).replay_workflow(history, raise_on_replay_failure=False)
        return ours.replay_failure, changed.replay_failure

    ours, changed = anyio.run(replay)
    assert ours is None, ours
    assert changed is not None


def test_a_cancel_before_the_worker_took_the_follow_up_reaches_the_turn(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config, pid_dir
):
    """The host cancels after the workflow sent the follow-up to the worker's own queue and
    before the worker took it (its own queue is not polled yet, in-process worker): Temporal
    cancels that activity unseen, so the workflow sends it again, carrying the cancel; the turn
    is cancelled where it runs (``turn.cancelled``, its program gone), not left running."""
    from executor_temporal.activities import SessionActivities
    from executor_temporal.worker import build_worker

    async def body():
        client = await Client.connect(temporal_address)
        queue = f"q-{uuid.uuid4().hex[:8]}"
        activities = SessionActivities(ledger=postgresql_ledger_url, state_dir=tmp_path / "s")
        worker = build_worker(client, activities, task_queue=queue)
        options = ExecutorOptions(local_start=0.25, heartbeat_timeout=30.0)
        controller = TemporalController(
            client, ledger=postgresql_ledger_url, task_queue=queue, options=options
        )
        async with activities, worker.shared, controller:  # its own queue: not yet
            ref = await controller.open_session(
                harness="stdio-jsonl", workspace=workspace, config=steps_config
            )
            summaries = []

            async def run() -> None:
                summaries.append(await controller.run_turn(ref, "steps 50 0.1"))

            async with anyio.create_task_group() as group:
                group.start_soon(run)
                while not await run_turn_queues(client, ref.session_id):  # sent, not taken
                    await anyio.sleep(0.05)
                await controller.cancel_turn(ref)
                with anyio.fail_after(20):
                    while len(await run_turn_queues(client, ref.session_id)) < 2 and (
                        not summaries  # (without the second one, the workflow answers now)
                    ):
                        await anyio.sleep(0.05)
                async with worker.own:
                    with anyio.fail_after(20):
                        while not summaries:
                            await anyio.sleep(0.05)
            events = controller.events(ref.session_id)
            queues = await run_turn_queues(client, ref.session_id)
            await controller.close_session(ref)
            return summaries[0], events, queues

    summary, events, queues = anyio.run(body)
    assert (summary.status, summary.attempt) == ("cancelled", 1), summary
    assert len(set(queues)) == 1 and queues[0].startswith("q-") and queues[0].count(".") >= 2
    types = [e.type for e in events if e.turn_id == summary.turn_id]
    assert [t for t in types if t in TERMINALS] == ["turn.cancelled"], types
    assert types.count("message.delta") < 50
    pids = invocations(pid_dir, summary.turn_id)
    assert len(pids) == 1 and not alive(pids[0])
