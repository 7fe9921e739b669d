"""Delivery latency: from a harness yielding an event to the turn's caller receiving it.

One turn of N deltas yielded ``--gap`` ms apart by a one-function harness (a model streaming
tokens); each delta carries the ``perf_counter`` at which it was yielded, and the caller takes
the difference on receipt. With durable-before-delivered this includes the ledger commit
(SQLite: the writer thread's round trip; JSONL: the write; memory: nothing). Prints median and
p99 per store.

    python benchmarks/delivery_latency.py [--events 300] [--gap 2] [--stores memory,jsonl,sqlite]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, rmtree, run_async, tempdir


def streamer(n: int, gap: float) -> Any:
    import anyio

    from harness_core import harness

    @harness("bench-latency")
    async def stream(message: Any, session: Any) -> Any:
        for _ in range(n):
            await anyio.sleep(gap)
            yield repr(time.perf_counter())

    return stream


async def _latencies(kind: str, n: int, gap: float) -> list[float]:
    from harness_core import Controller, plugins_from
    from harness_core.ledger import open_ledger

    directory = tempdir(f"latency-{kind}")
    url = {
        "memory": "memory:",
        "jsonl": f"jsonl://{os.path.join(directory, 'jsonl')}",
        "sqlite": f"sqlite://{os.path.join(directory, 'ledger.sqlite')}",
    }[kind]
    store = open_ledger(url)
    found: list[float] = []
    try:
        async with Controller(
            plugins=plugins_from([streamer(n, gap)]), ledger=store, state_dir=directory
        ) as controller:
            ref = await controller.open_session(harness="bench-latency", workspace=directory)
            async with controller.turn(ref, "go") as turn:
                async for event in turn:
                    if event.type == "message.delta":
                        found.append(time.perf_counter() - float(event.payload.text))
    finally:
        store.close()
        rmtree(directory)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--gap", type=float, default=2.0, help="milliseconds between events")
    parser.add_argument("--stores", default="memory,jsonl,sqlite")
    args = parser.parse_args()
    for kind in args.stores.split(","):
        values = sorted(run_async(_latencies, kind, args.events, args.gap / 1000))
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        note = f"{args.events} deltas {args.gap:g} ms apart; p99 {p99 * 1e6:,.0f} us"
        figure(f"delivery.latency.{kind}", statistics.median(values) * 1e6, "us", note=note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
