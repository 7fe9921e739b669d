"""Sessions: 1000 sessions x 1 turn on the SQLite ledger, sequential and concurrent (anyio).

Each session is opened, runs one turn of a one-function harness (returns a short string: four
events), and is closed. Concurrent = all sessions in one anyio task group.

``--interleave``: sequential sessions only, each run in a fresh process after 50 warm-up
sessions, alternating this tree, ``--before PYTHONPATH`` (older code first on the path, e.g. a
``git archive`` of ``harness_core`` and ``harness_hookspecs``) and superqode 2.25.0
(``--superqode-python``: create + send, its memory store); medians and ranges of wall rate and
CPU per session (``time.process_time``), and the wall ratio to superqode's.

    python benchmarks/sessions.py [--sessions 1000] [--runs 3] [--ledger sqlite|memory]
        [--interleave [--before PYTHONPATH] [--superqode-python PATH]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, open_store, rmtree, run_async, tempdir


def replier() -> Any:
    from harness_core import harness

    @harness("bench-reply")
    async def reply(message: Any, session: Any) -> str:
        return "ok"

    return reply


async def _one(controller: Any, workspace: str) -> None:
    ref = await controller.open_session(harness="bench-reply", workspace=workspace)
    result = await controller.run_turn(ref, "hi")
    assert result.ok
    await controller.close_session(ref)


async def _run(kind: str, sessions: int, concurrent: bool, cpu: list[float] | None = None) -> float:
    """Sessions per second (wall); ``cpu`` gets the CPU seconds of this process (all threads)
    the same sessions took, for a figure a loaded machine inflates less."""
    import anyio

    from harness_core import Controller, plugins_from

    directory = tempdir("sessions")
    store = open_store(kind, directory)
    try:
        async with Controller(
            plugins=plugins_from([replier()]), ledger=store, state_dir=directory
        ) as controller:
            start, cpu_start = time.perf_counter(), time.process_time()
            if concurrent:
                async with anyio.create_task_group() as group:
                    for _ in range(sessions):
                        group.start_soon(_one, controller, directory)
            else:
                for _ in range(sessions):
                    await _one(controller, directory)
            elapsed = time.perf_counter() - start
            if cpu is not None:
                cpu.append(time.process_time() - cpu_start)
            assert len(controller.sessions()) == sessions
        return sessions / elapsed
    finally:
        store.close()
        rmtree(directory)


WARM_UP = 50

#: superqode's side of ``--interleave``: create + send on its memory store, as
#: ``compare_superqode.WORKER`` does, after the same warm-up; prints [sessions/s, CPU s].
SUPERQODE_WORKER = r"""
import asyncio, json, sys, tempfile, time
from pathlib import Path
from superqode.harness.protocol_controller import HarnessProtocolController
from superqode.harness.protocol_adapters import DirectPythonHarnessAdapter
from superqode.harness.protocol import HarnessCreateRequest
from superqode.harness.store import MemoryHarnessStore

async def main(n, warm):
    async def reply(m, s):
        return "ok"
    d = tempfile.mkdtemp()
    c = HarnessProtocolController([DirectPythonHarnessAdapter("bench", reply)],
                                  store=MemoryHarnessStore())
    async def one():
        ref = await c.create(HarnessCreateRequest(harness_id="bench", working_directory=Path(d)))
        async for event in c.send(ref, "hi"):
            pass
    for _ in range(warm):
        await one()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        await one()
    return [n / (time.perf_counter() - start), time.process_time() - cpu]

print(json.dumps(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))))
"""


def _child(kind: str, sessions: int) -> None:
    """One ``--interleave`` sample of ours: warm up, then print [sessions/s, CPU s]."""
    run_async(_run, kind, WARM_UP, False)
    cpu: list[float] = []
    rate = run_async(_run, kind, sessions, False, cpu)
    print(json.dumps([rate, cpu[0]]))


def _sample(argv: list[str], pythonpath: str | None = None) -> tuple[float, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    rate, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return float(rate), float(cpu)


def _interleave(args: argparse.Namespace) -> None:
    n = args.sessions
    this = [sys.executable, os.path.abspath(__file__), "--child", args.ledger, str(n)]
    sides: dict[str, tuple[list[str], str | None]] = {"this tree": (this, None)}
    if args.before:
        sides["before"] = (this, args.before)
    if args.superqode_python and args.ledger == "memory":
        sides["superqode"] = ([args.superqode_python, "-c", SUPERQODE_WORKER, str(n), "50"], None)
    samples: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    loads = []
    for _ in range(args.runs):
        for side, (argv, pythonpath) in sides.items():
            samples[side].append(_sample(argv, pythonpath))
            loads.append(os.getloadavg()[0])
    load = f"load average {min(loads):.1f}-{max(loads):.1f}"
    for side, runs in samples.items():
        rates, cpus = [r for r, _ in runs], [c / n * 1e6 for _, c in runs]
        print(
            f"sessions.{args.ledger}.{n}.sequential [{side}]: "
            f"{statistics.median(rates):,.0f} /s [{min(rates):,.0f}-{max(rates):,.0f}] wall, "
            f"{statistics.median(cpus):.0f} us [{min(cpus):.0f}-{max(cpus):.0f}] CPU per session"
            f"  (median [range] of {args.runs}, {load})",
            flush=True,
        )
    if "superqode" in samples:
        ratios = [
            ours[0] / theirs[0]
            for ours, theirs in zip(samples["this tree"], samples["superqode"], strict=True)
        ]
        print(
            f"sessions.{args.ledger}.{n}.vs-superqode: {statistics.median(ratios):.2f}x "
            f"[{min(ratios):.2f}-{max(ratios):.2f}] wall (each run against the superqode run "
            "after it)  (target >= 1.5x)"
        )


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ledger", default="sqlite", choices=("sqlite", "memory"))
    parser.add_argument("--interleave", action="store_true")
    parser.add_argument("--before", metavar="PYTHONPATH")
    parser.add_argument("--superqode-python", metavar="PATH")
    args = parser.parse_args()
    if args.interleave:
        _interleave(args)
        return 0
    rates = {}
    for mode in ("sequential", "concurrent"):
        cpu: list[float] = []
        rates[mode] = statistics.median(
            run_async(_run, args.ledger, args.sessions, mode == "concurrent", cpu)
            for _ in range(args.runs)
        )
        figure(
            f"sessions.{args.ledger}.{args.sessions}.{mode}",
            rates[mode],
            "sessions/s",
            ">= 2,000" if args.ledger == "sqlite" else "",
            f"open + 1 turn + close, median of {args.runs}",
        )
        figure(
            f"sessions.{args.ledger}.{args.sessions}.{mode}.cpu",
            statistics.median(args.sessions / seconds for seconds in cpu),
            "sessions/CPU-s",
            "",
            f"per CPU-second of this process (all threads), median of {args.runs}; "
            f"load average {os.getloadavg()[0]:.1f}",
        )
    figure(
        f"sessions.{args.ledger}.{args.sessions}.speedup",
        rates["concurrent"] / rates["sequential"],
        "x",
        "> 1 (a real speed-up)",
        "concurrent / sequential",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
