"""Ledger throughput: one turn streaming N small deltas through the Controller, per store.

Figures (events/s, durable = the turn's terminal event returned, which flushes the store):
memory, JSONL and SQLite at N = 10,000 and 100,000; a store-only append figure (N events appended
one call each, then flushed); and the 100k/10k rate ratio per store.

    python benchmarks/ledger.py [--runs 3] [--sizes 10000,100000] [--stores memory,jsonl,sqlite]
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

TARGETS = {"memory": ">= 200k", "sqlite": ">= 100k"}


def make_store(kind: str, directory: str) -> Any:
    from harness_core.ledger import open_ledger

    if kind == "memory":
        return open_ledger("memory:")
    if kind == "jsonl":
        return open_ledger(f"jsonl://{os.path.join(directory, 'jsonl')}")
    return open_ledger(f"sqlite://{os.path.join(directory, 'ledger.sqlite')}")


def streamer(n: int) -> Any:
    from harness_core import harness

    @harness("bench-stream")
    async def stream(message: Any, session: Any) -> Any:
        for _ in range(n):
            yield "x"

    return stream


async def _turn_once(kind: str, n: int) -> tuple[float, int]:
    from harness_core import Controller, plugins_from

    directory = tempdir(f"ledger-{kind}")
    store = make_store(kind, directory)
    try:
        async with Controller(plugins=plugins_from([streamer(n)]), ledger=store) as controller:
            ref = await controller.open_session(harness="bench-stream", workspace=directory)
            count = 0
            start = time.perf_counter()
            async with controller.turn(ref, "go") as turn:
                async for _event in turn:
                    count += 1
            elapsed = time.perf_counter() - start
            assert turn.result().ok, turn.result()
            assert len(controller.events(ref.session_id)) == count + 1  # + session.opened
        return elapsed, count
    finally:
        store.close()
        rmtree(directory)


def turn_rate(kind: str, n: int, runs: int) -> float:
    rates = []
    for _ in range(runs):
        elapsed, count = run_async(_turn_once, kind, n)
        rates.append(count / elapsed)
    return statistics.median(rates)


def _events(n: int) -> list[Any]:
    from harness_hookspecs import Event, MessageDelta

    payload = MessageDelta(text="x")
    return [
        Event(
            event_id=f"ev_bench_{i}",
            sequence=i,
            session_id="bench-session",
            turn_id="turn_bench",
            harness="bench-stream",
            timestamp="2025-01-01T00:00:00.000000Z",
            type=payload.TYPE,
            payload=payload,
        )
        for i in range(1, n + 1)
    ]


def append_rate(kind: str, n: int, runs: int) -> float:
    events = _events(n)
    rates = []
    for _ in range(runs):
        directory = tempdir(f"append-{kind}")
        store = make_store(kind, directory)
        try:
            append = store.append
            start = time.perf_counter()
            for event in events:
                append((event,))
            store.flush()
            rates.append(n / (time.perf_counter() - start))
        finally:
            store.close()
            rmtree(directory)
    return statistics.median(rates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--stores", default="memory,jsonl,sqlite")
    parser.add_argument("--no-append", action="store_true", help="skip the store-only figures")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stores = args.stores.split(",")
    rates: dict[tuple[str, int], float] = {}
    for kind in stores:
        for n in sizes:
            rate = turn_rate(kind, n, args.runs)
            rates[kind, n] = rate
            figure(
                f"ledger.turn.{kind}.{n}",
                rate,
                "events/s",
                TARGETS.get(kind, ""),
                f"median of {args.runs}, durable" if kind != "memory" else f"median of {args.runs}",
            )
        if len(sizes) >= 2:
            small, large = min(sizes), max(sizes)
            figure(
                f"ledger.turn.{kind}.ratio_{large // 1000}k_{small // 1000}k",
                rates[kind, large] / rates[kind, small],
                "x",
                "0.8-1.2" if kind == "sqlite" else "",
            )
    if not args.no_append:
        n = max(sizes)
        for kind in stores:
            figure(
                f"ledger.append.{kind}.{n}",
                append_rate(kind, n, args.runs),
                "events/s",
                "",
                "store only, one append() per event, then flush()",
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
