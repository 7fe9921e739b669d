"""Sessions: 1000 sessions x 1 turn on the SQLite ledger, sequential and concurrent (anyio).

Each session is opened, runs one turn of a one-function harness (returns a short string: four
events), and is closed. Concurrent = all sessions in one anyio task group.

    python benchmarks/sessions.py [--sessions 1000] [--runs 3] [--ledger sqlite|memory]
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ledger", default="sqlite", choices=("sqlite", "memory"))
    args = parser.parse_args()
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
