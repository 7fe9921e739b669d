"""The floor under ``temporal.py``'s overhead: what one update costs on this machine's Temporal
dev server and Python SDK with no harness, next to our turn, in one run.

Starts a throwaway PostgreSQL (fsync on), the dev server (``executor_temporal.testing``), one
``harness worker`` and one bare worker process (this script with ``--worker``: the same SDK and
the same worker options as ``build_worker``), and a bare workflow (``_floor_workflow.py``) whose
updates stand for a turn that does nothing:

- ``nothing``: the update handler returns at once (the pure update round trip: one workflow
  task);
- ``local``: the handler runs a no-op local activity (one workflow task, no dispatch);
- ``activity``: the handler runs a no-op regular activity with the turn activity's options,
  started eagerly on the same worker (what ``SessionWorkflow.turn`` does: two workflow tasks and
  an activity);

and, round-robin with them so every figure sees the same load, an echo turn through the local
Controller and one through the ``TemporalController`` (``run_turn``; ``ours-streamed``: in
another session, its events followed through ``TemporalController.turn``, which keeps the
run_turn activity), on the same PostgreSQL ledger. Printed:
the median wall time of each (``temporal.floor.*``), ``temporal.floor.ours.overhead`` (ours -
local, as ``temporal.py`` prints it; the paired median beside it), CPU per operation (a
mean; /proc counts in 10 ms ticks) of the worker that served it and of the dev server, and
``temporal.floor.history.*``: the bare activity update's and our turn's steps as the workflow
history times them (the workflow task that accepts the update and schedules the activity, the
activity from its start to its completion, the workflow task that completes the update).

    python benchmarks/temporal_floor.py [--turns 30]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, venv_bin
from temporal import TARGET_MS, children_named, cpu_seconds

KINDS = ("local", "ours", "ours-streamed", "nothing", "local-activity", "activity")


async def serve_floor(address: str, queue: str) -> None:
    """The bare worker: ``build_worker``'s options, the floor workflow and its no-op activity."""
    import anyio
    from _floor_workflow import FloorWorkflow, noop
    from executor_temporal.shapes import DEFAULT_MAX_CONCURRENT
    from executor_temporal.worker import HEARTBEAT_THROTTLE, STICKY_TIMEOUT
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[FloorWorkflow],
        activities=[noop],
        max_concurrent_activities=DEFAULT_MAX_CONCURRENT,
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        disable_eager_activity_execution=False,
    )
    async with worker:
        print("floor worker ready", flush=True)
        await anyio.sleep_forever()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--worker", nargs=2, metavar=("ADDRESS", "QUEUE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import anyio

        anyio.run(serve_floor, *args.worker)
        return 0

    import anyio
    from executor_temporal.testing import DevServer
    from ledger_postgresql.testing import start as start_postgres

    postgres = start_postgres(durable=True)
    temporal = DevServer().start()
    root = Path(tempfile.mkdtemp(prefix="harness-bench-floor-"))
    workspace = root / "workspace"
    workspace.mkdir()
    queue, floor_queue = f"bench-{uuid.uuid4().hex[:8]}", f"floor-{uuid.uuid4().hex[:8]}"
    commands = {
        "ours": [venv_bin("harness"), "worker", "--address", temporal.address, "--task-queue",
                 queue, "--ledger", postgres.url, "--state-dir", str(root / "state")],
        "floor": [sys.executable, os.path.abspath(__file__), "--worker", temporal.address,
                  floor_queue],
    }  # fmt: skip
    workers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, command in commands.items():
            with open(root / f"{name}.log", "w") as log:
                workers[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        for name in commands:
            while "ready" not in (root / f"{name}.log").read_text():
                if workers[name].poll() is not None:
                    raise SystemExit(f"the {name} worker exited: see {root / (name + '.log')}")
                time.sleep(0.05)
        servers = children_named("temporal")
        measured = anyio.run(rounds, temporal.address, postgres.url, queue, floor_queue,
                             str(workspace), args.turns, workers, servers)  # fmt: skip
    finally:
        for worker in workers.values():
            worker.terminate()
            worker.wait(timeout=30)
        temporal.stop()
        postgres.stop()

    medians = {kind: statistics.median(measured[kind]) * 1000 for kind in KINDS}
    what = {
        "local": "echo turn, local Controller, PostgreSQL ledger",
        "ours": "echo turn, TemporalController, 1 harness worker",
        "ours-streamed": "the same, its events followed (TemporalController.turn)",
        "nothing": "bare update, handler returns at once",
        "local-activity": "bare update, handler runs a no-op local activity",
        "activity": "bare update, handler runs a no-op activity (eager, the turn's options)",
    }
    for kind in KINDS:
        cpu = ""
        if kind != "local":
            cpu = (f"; CPU per op: worker {statistics.fmean(measured['cpu.worker.' + kind]) * 1000:.1f} ms,"
                   f" dev server {statistics.fmean(measured['cpu.server.' + kind]) * 1000:.1f} ms")  # fmt: skip
        figure(f"temporal.floor.{kind}", medians[kind], "ms",
               note=f"median of {args.turns}: {what[kind]}{cpu}")  # fmt: skip
    pairs = zip(measured["ours"], measured["local"], strict=True)
    paired = statistics.median(ours - local for ours, local in pairs) * 1000
    overhead = medians["ours"] - medians["local"]
    streamed = medians["ours-streamed"] - medians["local"]
    figure("temporal.floor.ours-streamed.overhead", streamed, "ms",
           note="a turn whose events the caller follows: the run_turn activity, no local start")  # fmt: skip
    figure("temporal.floor.ours.overhead", overhead, "ms",
           note=f"ours - local (paired {paired:+.1f} ms); target <= +{TARGET_MS:g} ms; "
           f"the bare activity update alone: {medians['activity']:.1f} ms")  # fmt: skip
    for kind in ("activity", "ours"):
        steps = measured[f"steps.{kind}"]
        shown = " | ".join(f"{step.split(' ', 1)[1]} {ms:.1f}" for step, ms in steps.items())
        figure(f"temporal.floor.history.{kind}", sum(steps.values()), "ms",
               note=f"update's workflow history, medians per step (ms): {shown}")  # fmt: skip
    figure("temporal.floor.load", os.getloadavg()[0], "", note="1-minute load average at the end")
    return 0


async def rounds(address: str, ledger: str, queue: str, floor_queue: str, workspace: str,
                 turns: int, workers: dict[str, Any], servers: list[int]) -> dict[str, list[float]]:  # fmt: skip
    """``turns`` rounds of one operation of each kind, the order rotating every round."""
    from executor_temporal.client import TemporalController
    from temporalio.client import Client

    from harness_core import Controller

    client = await Client.connect(address)
    measured: dict[str, list[float]] = {}
    floor = await client.start_workflow(
        "FloorWorkflow", id=f"floor-{uuid.uuid4().hex[:8]}", task_queue=floor_queue
    )
    async with (
        Controller(ledger=ledger, state_dir=tempfile.mkdtemp()) as local,
        TemporalController(client, ledger=ledger, task_queue=queue) as remote,
    ):
        local_ref = await local.open_session(harness="echo", workspace=workspace)
        remote_ref = await remote.open_session(harness="echo", workspace=workspace)
        streamed_ref = await remote.open_session(harness="echo", workspace=workspace)
        # one warm-up of each: the first update of a workflow pays its cache entry
        for name in ("nothing", "local", "activity"):
            await floor.execute_update(name, "warm-up", result_type=str)
        await remote.run_turn(remote_ref, "warm-up")
        await remote.run_turn(streamed_ref, "warm-up")
        await local.run_turn(local_ref, "warm-up")

        async def one(kind: str, n: int) -> None:
            pid = workers["ours" if kind in ("local", "ours", "ours-streamed") else "floor"].pid
            before = [cpu_seconds(pid)] + [cpu_seconds(server) for server in servers]
            started = time.perf_counter()
            if kind == "local":
                assert (await local.run_turn(local_ref, f"turn {n}")).ok
            elif kind == "ours":
                assert (await remote.run_turn(remote_ref, f"turn {n}")).ok
            elif kind == "ours-streamed":
                async with remote.turn(streamed_ref, f"turn {n}") as turn:
                    async for _ in turn:
                        pass
                    assert (await turn.result()).ok
            else:
                update = "local" if kind == "local-activity" else kind
                await floor.execute_update(update, f"turn {n}", result_type=str)
            measured.setdefault(kind, []).append(time.perf_counter() - started)
            if kind != "local":
                after = [cpu_seconds(pid)] + [cpu_seconds(server) for server in servers]
                spent = [a - b for a, b in zip(after, before, strict=True)]
                measured.setdefault(f"cpu.worker.{kind}", []).append(spent[0])
                measured.setdefault(f"cpu.server.{kind}", []).append(sum(spent[1:]))

        for n in range(turns):
            shift = n % len(KINDS)
            for kind in KINDS[shift:] + KINDS[:shift]:
                await one(kind, n)
        await local.close_session(local_ref)
        await remote.close_session(remote_ref)
        await remote.close_session(streamed_ref)
        measured["steps.ours"] = await history_steps(client, remote_ref.session_id, "turn")
    await floor.signal("close")
    measured["steps.activity"] = await history_steps(client, floor.id, "activity")
    return measured


async def history_steps(client: Any, workflow_id: str, update: str) -> dict[str, float]:
    """Median milliseconds between consecutive history events of the workflow's ``update``
    calls, from the times the server wrote: ``{"1 workflow_started>completed": ms}``."""
    from temporalio.api.enums.v1 import EventType

    history = await client.get_workflow_handle(workflow_id).fetch_history()
    steps: dict[str, list[float]] = {}
    pending: list[tuple[str, float]] = []
    matched = False
    for event in history.events:
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        for long, short in (("workflow_execution_update", "update"), ("_task", "")):
            name = name.replace(long, short)
        pending.append((name, event.event_time.ToDatetime().timestamp()))
        if name == "update_accepted":
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            matched = request.input.name == update
            began = max(i for i, (n, _) in enumerate(pending) if n == "workflow_scheduled")
            pending = pending[began:]
        elif name == "update_completed":
            for index, ((a, at_a), (b, at_b)) in enumerate(itertools.pairwise(pending)):
                if matched:
                    step = f"{index} {a}>{b.split('_', 1)[1] if a[:6] == b[:6] else b}"
                    steps.setdefault(step, []).append((at_b - at_a) * 1000)
            pending, matched = [], False
    return {step: statistics.median(spans) for step, spans in steps.items()}


if __name__ == "__main__":
    raise SystemExit(main())
