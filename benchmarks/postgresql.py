"""PostgreSQL ledger next to SQLite, in one run: durable turn stream, 1000 sessions, live tail,
many writer processes.

Starts a throwaway PostgreSQL server (``ledger_postgresql.testing``, fsync on: durable means the
WAL is flushed at commit) on 127.0.0.1, and measures on both stores:

- ``pg.turn.*``: one Controller turn of N one-char deltas (durable: the terminal returned);
- ``pg.sessions.*``: 1000 x (open + 1 turn + close), sequential and in one anyio task group;
  both also on ``postgresql-relaxed`` (``synchronous_commit=off``, see ``KINDS``);
- ``pg.tail.*``: 200 events appended one by one (each flushed, 5 ms apart) by one store, seen by
  another store's live tail: append -> seen latency p50 / p95 / max, and how many were seen in
  order (PostgreSQL: LISTEN/NOTIFY; SQLite: polling);
- ``pg.workers``: 4 processes x 25 sessions x 100 events (batches of 10) into one PostgreSQL
  ledger: events/s, gaps and duplicates.

    python benchmarks/postgresql.py [--runs 3] [--events 10000] [--sessions 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ENV_POSTGRESQL, figure, open_store, rmtree, run_async, tempdir
from ledger import turn_rate
from sessions import _run as sessions_rate

#: postgresql-relaxed: ``synchronous_commit=off`` in the URL - a commit returns before its WAL is
#: flushed (a server crash may lose the last few hundred ms; nothing is corrupted), which is
#: closer to what SQLite's WAL + synchronous=NORMAL promises than PostgreSQL's default.
KINDS = ("sqlite", "postgresql", "postgresql-relaxed")


def tail_latency(kind: str, count: int = 200) -> tuple[list[float], int]:
    """Append -> seen by a live tail, in ms, for ``count`` events; and how many came in order."""
    import anyio
    from harness_hookspecs import Event, MessageDelta

    from harness_core.ledger.tail import follow

    directory = tempdir("tail")
    writer = open_store(kind, directory)
    if kind == "postgresql":
        from ledger_postgresql.store import PostgresStore

        reader: Any = PostgresStore(writer.url)
    else:
        reader = open_store(kind, directory)
    appended: dict[int, float] = {}

    def write() -> None:
        time.sleep(0.2)  # the tail is listening
        for sequence in range(1, count + 1):
            appended[sequence] = time.perf_counter()
            writer.append(
                [
                    Event(
                        event_id=f"ev_{sequence}",
                        sequence=sequence,
                        session_id="tailed",
                        turn_id="t",
                        harness="bench",
                        timestamp="2025-01-01T00:00:00.000000Z",
                        type="message.delta",
                        payload=MessageDelta(text="x"),
                    )
                ]
            )
            writer.flush()
            time.sleep(0.005)

    async def watch() -> tuple[list[float], int]:
        lags: list[float] = []
        in_order = 0
        async for event in follow(reader, "tailed"):
            lags.append((time.perf_counter() - appended[event.sequence]) * 1000)
            in_order += event.sequence == in_order + 1
            if event.sequence == count:
                break
        return lags, in_order

    thread = threading.Thread(target=write)
    thread.start()
    try:
        return anyio.run(watch)
    finally:
        thread.join()
        reader.close()
        writer.close()
        rmtree(directory)


WORKER = """
import sys
from harness_hookspecs import Event, MessageDelta, SessionRecord, SessionRef
from ledger_postgresql.store import PostgresStore

store = PostgresStore({url!r})
worker = sys.argv[1]
sessions = [f"w{{worker}}-{{n}}" for n in range(25)]
for sid in sessions:
    store.create_session(SessionRecord(ref=SessionRef(provider="bench", target="local",
        session_id=sid), created_at="2025-01-01T00:00:00Z", updated_at="2025-01-01T00:00:00Z",
        workspace="/tmp"))
for start in range(1, 101, 10):
    for sid in sessions:
        store.append([Event(event_id=f"ev_{{sid}}_{{i}}", sequence=i, session_id=sid,
            turn_id="t", harness="bench", timestamp="2025-01-01T00:00:00.000000Z",
            type="message.delta", payload=MessageDelta(text="x")) for i in range(start, start + 10)])
store.close()
"""


def workers_rate(processes: int = 4) -> tuple[float, int, int, int]:
    """events/s for ``processes`` x 25 x 100; (rate, rows, gaps, duplicates)."""
    import psycopg

    directory = tempdir("workers")
    store = open_store("postgresql", directory)
    url = store.url
    store.close()
    script = textwrap.dedent(WORKER).format(url=url)
    start = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-c", script, str(n)]) for n in range(processes)]
    for child in children:
        if child.wait(timeout=600) != 0:
            raise RuntimeError("a worker failed")
    elapsed = time.perf_counter() - start
    with psycopg.connect(url) as connection:
        rows, distinct = connection.execute(
            "SELECT count(*), count(DISTINCT event_id) FROM ledger_events"
        ).fetchone()  # type: ignore[misc]
        gaps = connection.execute(
            "SELECT count(*) FROM (SELECT session_id FROM ledger_events GROUP BY session_id "
            "HAVING max(sequence) <> count(*)) g"
        ).fetchone()[0]  # type: ignore[index]
    rmtree(directory)
    return rows / elapsed, rows, gaps, rows - distinct


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    from ledger_postgresql.testing import start

    server = start(durable=True)
    os.environ[ENV_POSTGRESQL] = server.url
    note = f"median of {args.runs}"
    try:
        print(f"# PostgreSQL {Path(server.bindir).parent.name} at 127.0.0.1:{server.port}")
        for kind in KINDS:
            figure(
                f"pg.turn.{kind}.{args.events}",
                turn_rate(kind, args.events, args.runs),
                "events/s",
                "",
                f"{note}, one Controller turn of N deltas, durable",
            )
        for kind in KINDS:
            for mode in ("sequential", "concurrent"):
                rate = statistics.median(
                    run_async(sessions_rate, kind, args.sessions, mode == "concurrent")
                    for _ in range(args.runs)
                )
                figure(
                    f"pg.sessions.{kind}.{args.sessions}.{mode}",
                    rate,
                    "sessions/s",
                    "",
                    f"{note}, open + 1 turn + close",
                )
        for kind in KINDS[:2]:
            lags, in_order = tail_latency(kind)
            figure(
                f"pg.tail.{kind}.p95",
                percentile(lags, 0.95),
                "ms",
                "<= 50 ms" if kind == "postgresql" else "",
                f"p50 {percentile(lags, 0.5):.2f} ms, max {max(lags):.2f} ms, "
                f"{in_order}/{len(lags)} in order of 200, append -> seen by another store",
            )
        rate, rows, gaps, duplicates = workers_rate()
        figure(
            "pg.workers.4x25x100",
            rate,
            "events/s",
            "",
            f"{rows} rows, {gaps} gaps, {duplicates} duplicates (4 processes, batches of 10)",
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
