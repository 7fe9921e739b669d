"""Ledger throughput: one turn of N small MessageDelta events per store (memory, JSONL, SQLite).

Figures (events/s; durable = ``flush()`` returned, which for SQLite means committed in WAL with
synchronous=NORMAL, for JSONL written and fsynced), at N = 10,000 and 100,000, each with the
100k/10k rate ratio:

- ``ledger.append.*``: the store alone - envelopes built beforehand, appended one call each;
- ``ledger.build_append.*``: the same with each ``Event(...)``/``MessageDelta(text="x")`` built
  inside the timed loop, as the controller builds them;
- ``ledger.turn.*``: one real Controller turn of a one-function harness yielding N deltas (the
  whole control plane; skip with ``--no-turn``).

    python benchmarks/ledger.py [--runs 3] [--sizes 10000,100000] [--stores memory,jsonl,sqlite]
        [--no-turn] [--turn-only]
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

from harness_core.digests import event_id_prefix

TARGETS = {"memory": ">= 200k", "sqlite": ">= 100k"}


make_store = open_store


def streamer(n: int) -> Any:
    from harness_core import harness

    @harness("bench-stream")
    async def stream(message: Any, session: Any) -> Any:
        for _ in range(n):
            yield "x"

    return stream


async def _turn_once(kind: str, n: int) -> tuple[float, float, int]:
    from harness_core import Controller, plugins_from

    directory = tempdir(f"ledger-{kind}")
    store = make_store(kind, directory)
    try:
        async with Controller(plugins=plugins_from([streamer(n)]), ledger=store) as controller:
            ref = await controller.open_session(harness="bench-stream", workspace=directory)
            count = 0
            start, cpu = time.perf_counter(), time.process_time()
            async with controller.turn(ref, "go") as turn:
                async for _event in turn:
                    count += 1
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            assert turn.result().ok, turn.result()
            assert len(controller.events(ref.session_id)) == count + 1  # + session.opened
        return elapsed, cpu, count
    finally:
        store.close()
        rmtree(directory)


def turn_rate(kind: str, n: int, runs: int) -> tuple[float, float]:
    """Events per second of wall time and per CPU-second of the process (all threads)."""
    rates, cpu_rates = [], []
    for _ in range(runs):
        elapsed, cpu, count = run_async(_turn_once, kind, n)
        rates.append(count / elapsed)
        cpu_rates.append(count / cpu)
    return statistics.median(rates), statistics.median(cpu_rates)


PREFIX = event_id_prefix("bench-session")


def _record() -> Any:
    from harness_hookspecs import SessionRecord, SessionRef

    ref = SessionRef(provider="bench-stream", target="local", session_id="bench-session")
    stamp = "2025-01-01T00:00:00.000000Z"
    return SessionRecord(ref=ref, created_at=stamp, updated_at=stamp, workspace=".", model=None)


def _event(i: int, payload: Any) -> Any:
    from harness_hookspecs import Event

    # The envelope as the controller stamps it (see SessionRecorder.record).
    return Event(
        event_id=f"{PREFIX}{i}",
        sequence=i,
        session_id="bench-session",
        turn_id="turn_0123456789abcdef01234567",
        harness="bench-stream",
        timestamp="2025-01-01T00:00:00.000000Z",
        type=payload.TYPE,
        payload=payload,
    )


def append_rate(kind: str, n: int, runs: int, *, build: bool) -> float:
    """N one-char deltas appended one call each, then flush() (durable for JSONL/SQLite).

    ``build``: the Event envelope and its MessageDelta are constructed inside the timed loop, as
    the controller does per delta; otherwise they are built beforehand (the store alone).
    """
    from harness_hookspecs import MessageDelta

    prebuilt = None if build else [_event(i, MessageDelta(text="x")) for i in range(1, n + 1)]
    rates = []
    for _ in range(runs):
        directory = tempdir(f"append-{kind}")
        store = make_store(kind, directory)
        try:
            store.create_session(_record())  # as open_session does, before the clock starts
            append = store.append
            start = time.perf_counter()
            if prebuilt is None:
                for i in range(1, n + 1):
                    append((_event(i, MessageDelta(text="x")),))
            else:
                for event in prebuilt:
                    append((event,))
            store.flush()
            rates.append(n / (time.perf_counter() - start))
            assert store.last_sequence("bench-session") == n
        finally:
            store.close()
            rmtree(directory)
    return statistics.median(rates)


def ratio(name: str, rates: dict[int, float], sizes: list[int], target: str) -> None:
    if len(sizes) >= 2:
        small, large = min(sizes), max(sizes)
        figure(
            f"{name}.ratio_{large // 1000}k_{small // 1000}k",
            rates[large] / rates[small],
            "x",
            target,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--stores", default="memory,jsonl,sqlite")
    parser.add_argument("--no-turn", action="store_true", help="skip the Controller figures")
    parser.add_argument("--turn-only", action="store_true", help="only the Controller figures")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stores = args.stores.split(",")
    note = f"median of {args.runs}"
    for build, label, what in (
        ()
        if args.turn_only
        else (
            (False, "append", "store only: prebuilt envelopes, one append() each, then flush()"),
            (
                True,
                "build_append",
                "Event+MessageDelta built in the loop, one append() each, flush()",
            ),
        )
    ):
        for kind in stores:
            rates: dict[int, float] = {}
            for n in sizes:
                rates[n] = append_rate(kind, n, args.runs, build=build)
                figure(
                    f"ledger.{label}.{kind}.{n}",
                    rates[n],
                    "events/s",
                    TARGETS.get(kind, ""),
                    f"{note}, {what}" + (", durable" if kind != "memory" else ""),
                )
            ratio(f"ledger.{label}.{kind}", rates, sizes, "0.8-1.2" if kind == "sqlite" else "")
    if not args.no_turn:
        for kind in stores:
            rates = {}
            for n in sizes:
                rates[n], cpu_rate = turn_rate(kind, n, args.runs)
                figure(
                    f"ledger.turn.{kind}.{n}",
                    rates[n],
                    "events/s",
                    TARGETS.get(kind, ""),
                    f"{note}, one Controller turn of N deltas (includes the controller)"
                    + (", durable" if kind != "memory" else "")
                    + f"; {cpu_rate:,.0f} events per CPU-second (process_time, all threads)",
                )
            ratio(f"ledger.turn.{kind}", rates, sizes, "0.8-1.2" if kind == "sqlite" else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
