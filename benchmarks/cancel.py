"""Cancel latency: ``cancel_turn`` -> the ``turn.cancelled`` terminal, and -> process group gone.

A stdio-jsonl turn runs the reference program with ``sleep 30``; once its first event arrives
the host calls ``cancel_turn``. Measured: time until the iterating task sees the terminal event,
and until ``killpg(pgid, 0)`` says the process group no longer exists.

    python benchmarks/cancel.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, run_async, tempdir

COMMAND = [sys.executable, "-m", "harness_stdio_jsonl.reference"]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _once(workspace: str) -> tuple[float, float, bool]:
    import anyio

    from harness_core import Controller, get_plugins
    from harness_core.ledger import open_ledger

    store = open_ledger(f"sqlite://{os.path.join(workspace, 'l.sqlite')}")
    try:
        async with Controller(
            plugins=get_plugins(), ledger=store, state_dir=workspace
        ) as controller:
            ref = await controller.open_session(
                harness="stdio-jsonl", workspace=workspace, config={"command": COMMAND}
            )
            live = controller.live(ref.session_id)
            marks: dict[str, float] = {}
            async with (
                controller.turn(ref, "sleep 30") as turn,
                anyio.create_task_group() as group,
            ):

                async def consume() -> None:
                    async for event in turn:
                        if event.terminal:
                            marks["terminal"] = time.perf_counter()
                            marks["type"] = 1.0 if event.type == "turn.cancelled" else 0.0

                group.start_soon(consume)
                while len(turn.events) < 2:  # turn.started + the program's first status
                    await anyio.sleep(0.005)
                pgid = live.context.turn_processes[0].pid
                start = time.perf_counter()
                await controller.cancel_turn(ref)
                while group_alive(pgid):
                    await anyio.sleep(0.001)
                marks["gone"] = time.perf_counter()
            left = group_alive(pgid)
        return marks["terminal"] - start, marks["gone"] - start, bool(marks["type"]) and not left
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    workspace = tempdir("cancel")
    try:
        samples = [run_async(_once, workspace) for _ in range(args.runs)]
    finally:
        rmtree(workspace)
    clean = all(s[2] for s in samples)
    figure(
        "cancel.terminal",
        statistics.median(s[0] for s in samples) * 1000,
        "ms",
        "<= 500 ms",
        f"median of {args.runs}, max {max(s[0] for s in samples) * 1000:.0f} ms",
    )
    figure(
        "cancel.process_group_gone",
        statistics.median(s[1] for s in samples) * 1000,
        "ms",
        "no process left",
        f"median of {args.runs}; all cancelled, none left: {'yes' if clean else 'NO'}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
