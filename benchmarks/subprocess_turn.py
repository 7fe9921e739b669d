"""Control-plane overhead of a real-subprocess turn (stdio-jsonl reference program).

Bare: spawn ``python -m harness_stdio_jsonl.reference`` (same minimal environment, own process
group), write one turn line, read output until the ``turn.completed`` line, SIGTERM the group
and reap it - what the controller does for a per-turn process. Controlled: the same program as a ``stdio-jsonl`` per-turn session through the
Controller (SQLite ledger, durable terminal). Overhead = median(controlled) - median(bare).

    python benchmarks/subprocess_turn.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, run_async, tempdir

COMMAND = [sys.executable, "-m", "harness_stdio_jsonl.reference"]
PROMPT = "the quick brown fox jumps over the lazy dog"


async def _bare(runs: int, workspace: str) -> list[float]:
    import anyio

    from harness_core.process import base_environment

    line = (json.dumps({"type": "turn", "turn_id": "t", "prompt": PROMPT}) + "\n").encode()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        process = await anyio.open_process(
            COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workspace,
            env=base_environment(),
            start_new_session=True,
        )
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(line)
        await process.stdin.aclose()
        output = b""
        async for chunk in process.stdout:  # the turn is over at its terminal line
            output += chunk
            if b"turn.completed" in output:
                break
        os.killpg(process.pid, signal.SIGTERM)  # as the controller ends a per-turn process
        await process.wait()
        await process.aclose()
        samples.append(time.perf_counter() - start)
        assert b"turn.completed" in output
    return samples


async def _controlled(runs: int, workspace: str) -> list[float]:
    from harness_core import Controller, get_plugins
    from harness_core.ledger import open_ledger

    store = open_ledger(f"sqlite://{os.path.join(workspace, 'l.sqlite')}")
    samples = []
    try:
        async with Controller(
            plugins=get_plugins(), ledger=store, state_dir=workspace
        ) as controller:
            ref = await controller.open_session(
                harness="stdio-jsonl", workspace=workspace, config={"command": COMMAND}
            )
            for _ in range(runs):
                start = time.perf_counter()
                result = await controller.run_turn(ref, PROMPT)
                samples.append(time.perf_counter() - start)
                assert result.ok, result
    finally:
        store.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    workspace = tempdir("subprocess")
    try:
        run_async(_bare, 2, workspace)  # warm-up
        bare = statistics.median(run_async(_bare, args.runs, workspace))
        controlled = statistics.median(run_async(_controlled, args.runs, workspace))
    finally:
        rmtree(workspace)
    figure("subprocess_turn.bare", bare * 1000, "ms", "", f"median of {args.runs}")
    figure("subprocess_turn.controlled", controlled * 1000, "ms", "", f"median of {args.runs}")
    figure(
        "subprocess_turn.overhead",
        (controlled - bare) * 1000,
        "ms",
        "<= 20 ms",
        "controlled - bare",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
