"""Workers that drain (issue 33): SIGTERM of the worker running a 10 s turn. With a 30 s
grace the turn completes on that worker; with a 1 s grace it is handed over and completes on
the other, recorded as a worker stop (never ``by: host``). The workers' JSON log lines and
their ``/metrics`` and health endpoints are checked on the way."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.client import TemporalController
from executor_temporal.shapes import ExecutorOptions
from temporal_workers import WorkerProcess, ancestors, program_pid
from temporalio.client import Client

#: The 10 s turn: 20 deltas 0.5 s apart.
TURN = "steps 20 0.5"


def log_lines(worker: WorkerProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in worker.log.read_text().splitlines() if line[:1] == "{"]


def http_of(worker: WorkerProcess) -> str:
    started = next(line for line in log_lines(worker) if line["event"] == "worker.started")
    return f"http://{started['http']}"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in the metrics")


@pytest.mark.parametrize("grace", [30.0, 1.0])
def test_sigterm_drains_the_worker_running_a_turn(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config, pid_dir,
    grace: float,
):  # fmt: skip
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = [
        WorkerProcess(
            name,
            temporal_address,
            queue,
            postgresql_ledger_url,
            tmp_path,
            grace=str(grace),
            log_format="json",
            http="127.0.0.1:0",
        )
        for name in ("a", "b")
    ]
    try:
        for worker in workers:
            worker.wait_ready()
        outcome = anyio.run(
            drain, temporal_address, postgresql_ledger_url, queue, workers, workspace,
            steps_config, pid_dir,
        )  # fmt: skip
    finally:
        for worker in workers:
            worker.stop()
    events, summary, victim, other, scraped, ready_after, exit_after, other_metrics = outcome
    types = [e.type for e in events if e.turn_id == summary.turn_id]
    terminals = [e for e in events if e.type.startswith("turn.") and e.type in (
        "turn.completed", "turn.failed", "turn.cancelled")]  # fmt: skip
    assert [e.type for e in terminals] == ["turn.completed"], types
    assert "turn.cancelled" not in types
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert metric(scraped, "harness_worker_turns_running") == 1.0  # scraped mid-turn
    assert ready_after == 503  # draining: not ready
    victim_log = [line["event"] for line in log_lines(victim)]
    assert victim_log[:2] == ["worker.started", "turn.attempt"]
    assert "worker.draining" in victim_log and victim_log[-1] == "worker.stopped"
    if grace == 30.0:  # the turn finished where it ran, then the worker left
        assert summary.attempt == 1 and "turn.restarted" not in types
        assert types.count("message.delta") == 20
        assert "turn.finished" in victim_log and "turn.handover" not in victim_log
        assert exit_after > 3.0  # it waited for the turn
    else:  # handed over after 1 s: the other worker ran attempt 2 to its end
        assert summary.attempt == 2 and types.count("turn.restarted") == 1
        stopped = [e for e in events if e.type == "status"]
        assert [e.payload.message for e in stopped] == [
            "worker stopped: the turn continues on another worker"
        ]
        assert types.index("status") < types.index("turn.restarted")
        handover = next(line for line in log_lines(victim) if line["event"] == "turn.handover")
        assert handover["reason"] == "worker-stopped" and handover["attempt"] == 1
        failover = next(line for line in log_lines(other) if line["event"] == "turn.failover")
        assert (failover["reason"], failover["attempt"]) == ("worker-stopped", 2)
        assert exit_after < 8.0  # grace + handover, not the turn's 10 s
        assert metric(other_metrics, "harness_worker_failovers_total") == 1.0
        completed = 'harness_worker_turn_attempts_total{outcome="completed"}'
        assert metric(other_metrics, completed) >= 1.0


def exit_watch(worker: WorkerProcess) -> Future[float]:
    """Seconds from now until ``worker`` exits (a thread waits for it)."""
    sent = time.monotonic()
    done: Future[float] = Future()

    def wait() -> None:
        worker.process.wait()
        done.set_result(time.monotonic() - sent)

    threading.Thread(target=wait, daemon=True).start()
    return done


async def drain(address, ledger_url, queue, workers, workspace, steps_config, pid_dir):
    client = await Client.connect(address)
    options = ExecutorOptions(heartbeat_timeout=2.0)
    async with TemporalController(
        client, ledger=ledger_url, task_queue=queue, options=options
    ) as controller:
        ref = await controller.open_session(
            harness="stdio-jsonl", workspace=workspace, config=steps_config
        )
        victim = scraped = ready_after = None
        async with controller.turn(ref, TURN) as turn:
            deltas = 0
            async for event in turn:
                deltas += event.type == "message.delta"
                if deltas == 3 and victim is None:
                    program = program_pid(pid_dir)
                    victim = next(w for w in workers if w.pid in ancestors(program))
                    base = http_of(victim)
                    assert (await anyio.to_thread.run_sync(get, base + "/readyz"))[0] == 200
                    _, scraped = await anyio.to_thread.run_sync(get, base + "/metrics")
                    victim.process.send_signal(signal.SIGTERM)
                    exited = exit_watch(victim)
                    await anyio.sleep(0.3)
                    ready_after, _ = await anyio.to_thread.run_sync(get, base + "/readyz")
            summary = await turn.result()
        assert victim is not None
        exit_after = await anyio.to_thread.run_sync(exited.result, 60)
        events = controller.events(ref.session_id)
        await controller.close_session(ref)
    other = next(w for w in workers if w is not victim)
    _, other_metrics = await anyio.to_thread.run_sync(get, http_of(other) + "/metrics")
    return events, summary, victim, other, scraped, ready_after, exit_after, other_metrics
