"""A slow async observer is no brake: a turn of N deltas with and without an ``async def``
``on_event`` observer that takes ``--delay`` seconds per event (a stalled webhook).

The turn's wall time is taken with no observer and with the slow one (median of ``--runs``
each, alternating), on a SQLite ledger; the target is a slowdown under 10 %. Then, with a
queue large enough for the turn (``--queue``, default the runtime's), the benchmark waits for
the observer to catch up and checks it saw every recorded event, in order: at 1 s per event
that takes as many seconds as the turn has events (~17 minutes for 1,000 deltas), so
``--delay`` can be lowered to check the second figure quickly.

    python benchmarks/async_observer.py [--deltas 1000] [--gap 2] [--delay 1.0] [--runs 3]
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

from harness_core import hookimpl


def streamer(n: int, gap: float) -> Any:
    import anyio

    from harness_core import harness

    @harness("bench-observer")
    async def stream(message: Any, session: Any) -> Any:
        for index in range(n):
            await anyio.sleep(gap)  # a model streaming tokens
            yield f"t{index} "

    return stream


class SlowObserver:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.seen: list[tuple[str, int]] = []

    @hookimpl
    async def on_event(self, event: Any) -> None:
        import anyio

        await anyio.sleep(self.delay)
        self.seen.append((event.session_id, event.sequence))


async def _turn(n: int, gap: float, observer: SlowObserver | None, queue: int, wait: bool) -> Any:
    from harness_core import Controller, plugins_from

    plugins: list[Any] = [streamer(n, gap)]
    if observer is not None:
        plugins.append(observer)
    directory = tempdir("async-observer")
    try:
        async with Controller(
            plugins=plugins_from(plugins),
            ledger=f"sqlite://{os.path.join(directory, 'ledger.sqlite')}",
            state_dir=os.path.join(directory, "state"),
            observer_queue=queue,
        ) as controller:
            ref = await controller.open_session(harness="bench-observer", workspace=directory)
            start = time.perf_counter()
            result = await controller.run_turn(ref, "go")
            elapsed = time.perf_counter() - start
            assert result.status == "completed", result.status
            await controller.close_session(ref)
            recorded = [(e.session_id, e.sequence) for e in controller.events(ref.session_id)]
            drained = None
            if wait and observer is not None:
                backlog = sum(q.queued for q in controller.delivery.async_observers.values())
                figure("backlog at the turn's end", backlog, "events")
                begin = time.perf_counter()
                await controller.delivery.observers_idle()
                drained = time.perf_counter() - begin
            dropped = sum(q.dropped for q in controller.delivery.async_observers.values())
            return elapsed, recorded, drained, dropped
    finally:
        rmtree(directory)


def main() -> None:
    from harness_core.observer_queue import DEFAULT_OBSERVER_QUEUE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=1000)
    parser.add_argument("--gap", type=float, default=2.0, help="ms between deltas")
    parser.add_argument("--delay", type=float, default=1.0, help="observer seconds per event")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queue", type=int, default=DEFAULT_OBSERVER_QUEUE)
    parser.add_argument("--no-drain", action="store_true", help="only the turn times")
    args = parser.parse_args()
    gap = args.gap / 1000
    times: dict[str, list[float]] = {"none": [], "instant": [], "slow": []}
    for _ in range(args.runs):  # alternating, so load on the machine hits all three alike
        for kind, observer in (
            ("none", None),
            ("instant", SlowObserver(0.0)),
            ("slow", SlowObserver(args.delay)),
        ):
            times[kind].append(run_async(_turn, args.deltas, gap, observer, args.queue, False)[0])
    median = {kind: statistics.median(runs) for kind, runs in times.items()}
    for kind, label in (
        ("none", "no observer"),
        ("instant", "an instant async observer"),
        ("slow", f"a {args.delay:g} s/event async observer"),
    ):
        runs = ", ".join(f"{t:.3f}" for t in times[kind])
        figure(f"turn, {label} (median)", median[kind], "s", note=f"runs {runs}")
    # What the slow observer costs the turn against no observer at all: the target (the turn
    # neither awaits an async observer nor the ledger's commit for it; its worker waits for
    # durability). And against an instant one, for the record.
    slowdown = (median["slow"] / median["none"] - 1) * 100
    figure("slowdown, slow vs no observer", slowdown, "%", target="< 10 %")
    figure(
        "slowdown, slow vs instant observer", (median["slow"] / median["instant"] - 1) * 100, "%"
    )
    if args.no_drain:
        return
    observer = SlowObserver(args.delay)
    elapsed, recorded, drained, dropped = run_async(
        _turn, args.deltas, gap, observer, args.queue, True
    )
    figure("turn with the observer (the drained run)", elapsed, "s")
    figure("observer caught up after the turn in", drained or 0.0, "s")
    figure("events recorded", len(recorded), "events")
    figure("events the observer saw", len(observer.seen), "events", note=f"dropped {dropped}")
    print("observer saw every event in order:", observer.seen == recorded)


if __name__ == "__main__":
    main()
