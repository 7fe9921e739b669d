"""One host at scale, and the durable store against its own limit (issue 34).

- ``limit``: one Controller turn of N deltas on the SQLite ledger (events/s, durable), then the
  very rows that turn stored written again with the raw driver into a fresh ledger of the same
  schema and pragmas (WAL, ``synchronous=NORMAL``): ``executemany`` in transactions of 512 rows.
  The ratio ours / raw is how close the control plane comes to SQLite itself.
- ``idle``: N sessions opened in one Controller on SQLite (no turn): memory per idle session
  (``tracemalloc``: Python objects the sessions hold; and the process's RSS growth), the open
  rate, then the resume rate of all N in a second Controller on the same ledger.
- ``listing``: ``harness sessions`` (the real command, its own process) over a ledger of
  ``--listed`` recorded sessions (``harness_core.testing.many_sessions``): wall time, median.
- ``concurrent``: ``--turns`` one-function turns streaming ``--deltas`` deltas each, all at once
  in one Controller on SQLite: aggregate events/s against the single-turn rate of the same run,
  delivery latency (from the harness yielding a delta to the turn's caller receiving it,
  durable first) p50 / p99 with every turn streaming a delta each ``--gap`` ms (unpaced, it
  measures the backlog), the slowest turn's rate against the median turn's, and the time from
  an event's recording to an ``on_event`` observer (the issue's definition: the ``timestamp``
  is stamped when it is recorded) in the paced run and in the unpaced one run again with
  ``Controller(max_backlog=1024)``: that run gives the issue's three figures (aggregate against
  single, p99 record -> observer, slowest turn against the median) in one configuration, once
  as CPython collects by default and once with its full collections deferred (generation 2's
  threshold raised, as ``docs/host-apps.md`` suggests for a host holding a million live
  events: a full collection scans all of them, 100-300 ms).

    python benchmarks/scale.py [--only limit,idle,listing,concurrent] [--events 100000]
        [--sessions 10000] [--listed 100000] [--turns 1000] [--deltas 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import figure, positive_int, rmtree, run_async, tempdir, venv_bin

SECTIONS = ("limit", "idle", "listing", "concurrent")


class Figure(NamedTuple):
    """One measured figure; ``ok`` is whether it meets ``target`` (``None``: no target)."""

    name: str
    value: float
    unit: str
    target: str = ""
    note: str = ""
    ok: bool | None = None


#: Rows per transaction of the raw-driver line (the ledger's own largest statement).
RAW_BATCH = 512


def rss_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# -- limit ---------------------------------------------------------------------------------------


async def _our_turn(path: str, n: int, url: str | None = None) -> float:
    """One Controller turn of ``n`` deltas (events/s) on the SQLite ledger at ``path``, or on
    the ledger ``url`` (``memory:``: the control plane with no ledger I/O at all)."""
    import ledger

    from harness_core import Controller, plugins_from
    from harness_core.ledger import open_ledger

    store = open_ledger(url or f"sqlite://{path}")
    try:
        async with Controller(plugins=plugins_from([ledger.streamer(n)]), ledger=store) as c:
            ref = await c.open_session(harness="bench-stream", workspace=os.path.dirname(path))
            start = time.perf_counter()
            count = 0
            async with c.turn(ref, "go") as turn:
                async for _ in turn:
                    count += 1
            elapsed = time.perf_counter() - start
            assert turn.result().ok
        return count / elapsed
    finally:
        store.close()


def _raw_rate(
    source: str,
    target: str,
    *,
    order: str = "session_id, sequence",
    per_commit: int = RAW_BATCH,
) -> tuple[float, int]:
    """The rows ``source`` holds (in ``order``), written again into ``target`` (a fresh ledger
    file: same schema and pragmas) by the driver alone, ``per_commit`` rows a transaction:
    rows/s and the row count."""
    from harness_core.ledger import open_ledger
    from harness_core.ledger.sqlite_schema import connect

    with sqlite3.connect(source) as reader:
        rows = reader.execute(f"SELECT * FROM events ORDER BY {order}").fetchall()
        sessions = reader.execute("SELECT * FROM sessions").fetchall()
        prefixes = reader.execute("SELECT * FROM event_prefixes").fetchall()
    open_ledger(f"sqlite://{target}").close()  # the schema, as the store creates it
    connection = connect(target)
    try:  # the sessions as the store creates them: with their event ids' prefixes
        connection.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", sessions)
        connection.executemany("INSERT INTO event_prefixes VALUES (?, ?, ?)", prefixes)
        placeholders = ", ".join(["?"] * len(rows[0]))
        insert = f"INSERT INTO events VALUES ({placeholders})"
        start = time.perf_counter()
        for first in range(0, len(rows), per_commit):
            connection.execute("BEGIN")
            connection.executemany(insert, rows[first : first + per_commit])
            connection.execute("COMMIT")
        elapsed = time.perf_counter() - start
    finally:
        connection.close()
    return len(rows) / elapsed, len(rows)


def _raw_interleaved(source: str, directory: str, per_commit: int) -> float:
    """:func:`_raw_rate` of the rows in the order they were recorded (many sessions
    interleaved). Appends interleaved across sessions land on a different B-tree page each (the
    table is clustered by session), so this rate is far below the sequential one: it is the
    store's own limit for a busy host."""
    target = os.path.join(directory, "raw-interleaved.sqlite")
    return _raw_rate(source, target, order="timestamp, sequence", per_commit=per_commit)[0]


def limit(n: int, runs: int) -> list[Figure]:
    """Ours against the raw driver; and the same turn on the memory store against the raw
    driver: the control plane's own ceiling for that ratio (a turn that writes nothing)."""
    ours, raw, bare = [], [], []
    for _ in range(runs):
        directory = tempdir("scale-limit")
        try:
            source = os.path.join(directory, "ours.sqlite")
            ours.append(run_async(_our_turn, source, n))
            rate, _rows = _raw_rate(source, os.path.join(directory, "raw.sqlite"))
            raw.append(rate)
            bare.append(run_async(_our_turn, source, n, "memory:"))
        finally:
            rmtree(directory)
    ours_rate, raw_rate = statistics.median(ours), statistics.median(raw)
    bare_rate = statistics.median(bare)
    ratio, ceiling = ours_rate / raw_rate, bare_rate / raw_rate
    return [
        Figure(f"scale.limit.sqlite.turn.{n}", ours_rate, "ev/s", note="Controller turn, durable"),
        Figure(f"scale.limit.sqlite.raw.{n}", raw_rate, "ev/s", note="executemany, same rows"),
        Figure("scale.limit.sqlite.ratio", ratio, "x", ">= 0.8", "ours / raw", ratio >= 0.8),
        Figure(f"scale.limit.memory.turn.{n}", bare_rate, "ev/s", note="the same turn, no ledger"),
        Figure(
            "scale.limit.memory_vs_sqlite_raw",
            ceiling,
            "x",
            note="the ratio's ceiling: a turn that writes nothing / raw SQLite",
        ),
    ]


# -- idle sessions -------------------------------------------------------------------------------


def _idle_harness() -> Any:
    from harness_core import harness

    @harness("bench-idle")
    async def idle(message: Any, session: Any) -> str:
        return "ok"

    return idle


async def _idle(n: int, directory: str) -> dict[str, float]:
    from harness_core import Controller, plugins_from
    from harness_core.ledger import open_ledger

    path = os.path.join(directory, "ledger.sqlite")
    plugins = plugins_from([_idle_harness()])
    store = open_ledger(f"sqlite://{path}")
    ids = []
    try:
        async with Controller(plugins=plugins, ledger=store, state_dir=directory) as controller:
            await controller.open_session(harness="bench-idle", workspace=directory)  # warm
            store.flush()
            tracemalloc.start()
            rss_before, traced_before = rss_kb(), tracemalloc.get_traced_memory()[0]
            start = time.perf_counter()
            for _ in range(n):
                ref = await controller.open_session(harness="bench-idle", workspace=directory)
                ids.append(ref.session_id)
            store.flush()
            opened = time.perf_counter() - start
            traced = tracemalloc.get_traced_memory()[0] - traced_before
            tracemalloc.stop()
            rss_after = rss_kb()
            assert len(controller.live_sessions) == n + 1
    finally:
        store.close()
    store = open_ledger(f"sqlite://{path}")
    try:
        async with Controller(plugins=plugins, ledger=store, state_dir=directory) as controller:
            start = time.perf_counter()
            for session_id in ids:
                await controller.resume_session(session_id)
            store.flush()
            resumed = time.perf_counter() - start
    finally:
        store.close()
    return {
        "traced_kb": traced / 1024 / n,
        "rss_growth_kb": (rss_after - rss_before) / n,
        "rss_mb": rss_after / 1024,
        "open_rate": n / opened,
        "resume_rate": n / resumed,
    }


def idle(n: int) -> list[Figure]:
    directory = tempdir("scale-idle")
    try:
        got = run_async(_idle, n, directory)
    finally:
        rmtree(directory)
    per = got["traced_kb"]
    return [
        Figure(f"scale.idle.{n}.per_session", per, "KB", "<= 20 KB", "tracemalloc", per <= 20),
        Figure(f"scale.idle.{n}.rss_growth", got["rss_growth_kb"], "KB", note="RSS / session"),
        Figure(f"scale.idle.{n}.rss", got["rss_mb"], "MB", note="controller process RSS"),
        Figure(f"scale.idle.{n}.open_rate", got["open_rate"], "/s", note="open_session"),
        Figure(f"scale.idle.{n}.resume_rate", got["resume_rate"], "/s", note="resume_session"),
    ]


# -- harness sessions over many --------------------------------------------------------------------


def listing(n: int, runs: int) -> list[Figure]:
    from harness_core.testing.many_sessions import fill_ledger

    directory = tempdir("scale-listing")
    try:
        url = f"sqlite://{os.path.join(directory, 'ledger.sqlite')}"
        start = time.perf_counter()
        fill_ledger(url, n)
        filled = time.perf_counter() - start
        env = dict(os.environ, HARNESS_LEDGER=url, HARNESS_STATE_DIR=directory)
        command = [venv_bin("harness"), "sessions"]
        walls, cpus = [], []
        for i in range(runs + 1):
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if i:  # the first is a warm-up (.pyc files, the plugin listing)
                walls.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
            assert done.returncode == 0, done.stderr
        lines = len(done.stdout.splitlines())
    finally:
        rmtree(directory)
    wall = statistics.median(walls) * 1000
    return [
        Figure(f"scale.listing.{n}.fill", n / filled, "/s", note="sessions recorded per second"),
        Figure(
            f"scale.listing.{n}.harness_sessions",
            wall,
            "ms",
            "<= 300 ms",
            f"{lines} lines",
            wall <= 300,
        ),
        Figure(
            f"scale.listing.{n}.harness_sessions_cpu",
            statistics.median(cpus) * 1000,
            "ms",
            note="CPU of the process (a loaded machine inflates the wall time above)",
        ),
    ]


# -- concurrent turns --------------------------------------------------------------------------------


def _timed_streamer(deltas: int, gap: float) -> Any:
    """Deltas that carry the ``perf_counter`` of their yield; ``gap`` seconds apart (a model
    streaming tokens) or, with 0, as fast as the control plane takes them."""
    import anyio

    from harness_core import harness

    @harness("bench-timed")
    async def timed(message: Any, session: Any) -> Any:
        clock = time.perf_counter
        for _ in range(deltas):
            if gap:
                await anyio.sleep(gap)
            yield f"{clock():.6f}"

    return timed


#: the bound of the concurrent run's second pass (``Controller(max_backlog=...)``)
BACKLOG = 1024
#: generation 2's threshold with full collections deferred (never, within a run)
DEFERRED_FULL_GC = 1_000_000


def _full_collections_deferred(function: Callable[..., Any], *args: Any) -> Any:
    """Run ``function`` with CPython's full collections deferred, then restore the thresholds
    (and collect once, as a host would at a quiet moment)."""
    import gc

    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, DEFERRED_FULL_GC)
    try:
        return run_async(function, *args)
    finally:
        gc.set_threshold(young, middle, full)
        gc.collect()


@contextlib.contextmanager
def _full_collections_timed() -> Iterator[list[float]]:
    """The seconds each of CPython's full collections (generation 2) took while inside: a full
    collection scans every tracked object, and nothing else runs meanwhile."""
    import gc

    pauses: list[float] = []
    began: list[float] = []

    def timed(phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            began.append(time.perf_counter())
        elif began:
            pauses.append(time.perf_counter() - began.pop())

    gc.callbacks.append(timed)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(timed)


async def _concurrent(
    turns: int,
    deltas: int,
    gap: float,
    directory: str,
    max_backlog: int | None = None,
    observe: bool = True,
) -> dict[str, Any]:
    """The turns at once; ``observe``: with an ``on_event`` observer timing record -> observer
    (it costs each event a hook call: the earlier aggregate line runs without it)."""
    import anyio

    from harness_core import Controller, hookimpl, plugins_from
    from harness_core.ledger import open_ledger

    store = open_ledger(f"sqlite://{os.path.join(directory, 'ledger.sqlite')}")
    latencies: list[float] = []
    rates: list[float] = []
    # record -> an on_event observer (the definition): the time seen and the event's
    # timestamp (stamped when recorded), parsed after the run so the observer costs little
    seen: list[tuple[float, str]] = []

    class Observer:
        @hookimpl
        def on_event(self, event: Any) -> None:
            if event.type == "message.delta":
                seen.append((time.time(), event.timestamp))

    async def one(controller: Any, ref: Any, keep: bool) -> float:
        clock = time.perf_counter
        count = 0
        start = clock()
        async with controller.turn(ref, "go") as turn:
            async for event in turn:
                if event.type == "message.delta":
                    count += 1
                    if keep:
                        latencies.append(clock() - float(event.payload.text))
        elapsed = clock() - start
        assert turn.result().ok and count == deltas
        return count / elapsed

    try:
        observers = [Observer()] if observe else []
        plugins = plugins_from([_timed_streamer(deltas, gap), *observers])
        async with Controller(
            plugins=plugins, ledger=store, state_dir=directory, max_backlog=max_backlog
        ) as controller:
            single = await controller.open_session(harness="bench-timed", workspace=directory)
            await one(controller, single, False)  # warm
            single_rate = statistics.median(
                [await one(controller, single, False) for _ in range(7)]
            )
            refs = [
                await controller.open_session(harness="bench-timed", workspace=directory)
                for _ in range(turns)
            ]

            async def run(ref: Any) -> None:
                rates.append(await one(controller, ref, True))

            seen.clear()
            start = time.perf_counter()
            with _full_collections_timed() as pauses:
                async with anyio.create_task_group() as group:
                    for ref in refs:
                        group.start_soon(run, ref)
            elapsed = time.perf_counter() - start
    finally:
        store.close()
    latencies.sort()
    rates.sort()
    from harness_core.clock import epoch_seconds

    moments = [(at, epoch_seconds(stamp)) for at, stamp in seen]
    observed = sorted(at - moment for at, moment in moments if moment is not None) or [math.nan]
    return {
        "observed_p50": observed[len(observed) // 2] * 1000,
        "observed_p99": observed[int(len(observed) * 0.99)] * 1000,
        "aggregate": turns * deltas / elapsed,
        "single": single_rate,
        "p50": latencies[len(latencies) // 2] * 1000,
        "p99": latencies[int(len(latencies) * 0.99)] * 1000,
        "slowest_vs_median": rates[0] / rates[len(rates) // 2],
        "full_collections": len(pauses),
        "longest_full_collection": max(pauses, default=0.0) * 1000,
        "full_collections_total": sum(pauses) * 1000,
    }


def _bounded_figures(name: str, got: dict[str, Any]) -> list[Figure]:
    ratio, spread = got["aggregate"] / got["single"], got["slowest_vs_median"]
    p99 = got["observed_p99"]
    collections = (
        f"{got['full_collections']} full collections, "
        f"{got['full_collections_total']:,.0f} ms in all"
    )
    return [
        Figure(f"{name}.aggregate", got["aggregate"], "ev/s", note="all turns at once"),
        Figure(
            f"{name}.longest_full_collection",
            got["longest_full_collection"],
            "ms",
            note=f"CPython's collector, while the turns ran: {collections}",
        ),
        Figure(f"{name}.aggregate_vs_single", ratio, "x", ">= 0.8", ok=ratio >= 0.8),
        Figure(f"{name}.slowest_vs_median", spread, "x", ">= 0.5", "turn rates", spread >= 0.5),
        Figure(
            f"{name}.record_to_observer_p99",
            p99,
            "ms",
            "<= 50 ms",
            f"the event recorded -> an on_event observer (p50 {got['observed_p50']:.0f} ms)",
            p99 <= 50,
        ),
    ]


def concurrent(turns: int, deltas: int, paced: int, gap_ms: float) -> list[Figure]:
    """Throughput as fast as the harnesses can yield (their deltas queue behind delivery, so
    latency there is the backlog); latency with each turn streaming a delta every ``gap_ms``."""
    directory = tempdir("scale-concurrent")
    try:
        got = run_async(_concurrent, turns, deltas, 0.0, directory, None, False)
    finally:
        rmtree(directory)
    name = f"scale.concurrent.{turns}x{deltas}"
    ratio, spread = got["aggregate"] / got["single"], got["slowest_vs_median"]
    figures = [
        Figure(f"{name}.aggregate", got["aggregate"], "ev/s", note="all turns at once"),
        Figure(f"{name}.single", got["single"], "ev/s", note="one turn alone, same run"),
        Figure(f"{name}.aggregate_vs_single", ratio, "x", ">= 0.8", ok=ratio >= 0.8),
        Figure(f"{name}.slowest_vs_median", spread, "x", ">= 0.5", "turn rates", spread >= 0.5),
        Figure(f"{name}.backlog_p99", got["p99"], "ms", note="yield -> caller, unpaced"),
    ]
    for label, runner in (("", run_async), (".full_gc_deferred", _full_collections_deferred)):
        directory = tempdir("scale-bounded")
        try:  # the same with the producers paced by the ledger (Controller(max_backlog=...))
            got = runner(_concurrent, turns, deltas, 0.0, directory, BACKLOG)
        finally:
            rmtree(directory)
        figures += _bounded_figures(f"{name}.max_backlog_{BACKLOG}{label}", got)
    directory = tempdir("scale-paced")
    offered = turns * 1000 / gap_ms
    per_commit = max(1, round(offered / 1000))  # a commit every millisecond
    try:
        got = run_async(_concurrent, turns, paced, gap_ms / 1000, directory)
        raw = _raw_interleaved(os.path.join(directory, "ledger.sqlite"), directory, per_commit)
    finally:
        rmtree(directory)
    name = f"scale.paced.{turns}x{paced}.every_{gap_ms:g}ms"
    return [
        *figures,
        Figure(
            f"{name}.raw_limit",
            raw,
            "ev/s",
            note=f"the driver alone: the run's rows, as interleaved, {per_commit} a commit",
        ),
        Figure(f"{name}.delivery_p50", got["p50"], "ms", note=f"{offered:,.0f} ev/s offered"),
        Figure(
            f"{name}.record_to_observer_p99",
            got["observed_p99"],
            "ms",
            note="the event recorded -> an on_event observer",
        ),
        Figure(
            f"{name}.delivery_p99",
            got["p99"],
            "ms",
            "<= 50 ms",
            "yield -> caller, durable",
            got["p99"] <= 50,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--runs", type=positive_int, default=3)
    parser.add_argument("--events", type=positive_int, default=100_000)
    parser.add_argument("--sessions", type=positive_int, default=10_000)
    parser.add_argument("--listed", type=positive_int, default=100_000)
    parser.add_argument("--turns", type=positive_int, default=1_000)
    parser.add_argument("--deltas", type=positive_int, default=1_000)
    parser.add_argument("--paced", type=positive_int, default=100, help="deltas of a paced turn")
    parser.add_argument("--gap", type=float, default=50.0, help="ms between a paced turn's deltas")
    args = parser.parse_args()
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section {unknown[0]!r} (known: {', '.join(SECTIONS)})")
    print(f"load average {os.getloadavg()[0]:.1f}")
    measure(wanted, args, lambda f: figure(f.name, f.value, f.unit, f.target, f.note))
    return 0


def measure(
    wanted: list[str],
    args: argparse.Namespace,
    show: Callable[[Figure], object] = lambda found: None,
) -> list[Figure]:
    """The figures of the ``wanted`` sections, each handed to ``show`` as its section ends
    (``benchmarks/run.py --scale`` calls this)."""
    sections: dict[str, Callable[[], list[Figure]]] = {
        "limit": lambda: limit(args.events, args.runs),
        "idle": lambda: idle(args.sessions),
        "listing": lambda: listing(args.listed, args.runs),
        "concurrent": lambda: concurrent(args.turns, args.deltas, args.paced, args.gap),
    }
    found: list[Figure] = []
    for name in SECTIONS:
        if name in wanted:
            for one in sections[name]():
                show(one)
                found.append(one)
    return found


if __name__ == "__main__":
    raise SystemExit(main())
