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
- ``pg.workers``: 4 processes x 25 sessions x ``--worker-events`` events (batches of 10) into one
  PostgreSQL ledger: events/s, gaps and duplicates; then the very rows written again by 4
  processes with the raw driver's fastest path (psycopg ``COPY``, a commit per 500 rows): the
  ratio ours / raw.

    python benchmarks/postgresql.py [--runs 3] [--events 10000] [--sessions 1000]
        [--worker-events 400] [--only-workers]
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
import sys, time
from harness_hookspecs import Event, MessageDelta, SessionRecord, SessionRef
from ledger_postgresql.store import PostgresStore

store = PostgresStore({url!r})
began = time.time()
worker = sys.argv[1]
sessions = [f"w{{worker}}-{{n}}" for n in range(25)]
for sid in sessions:
    store.create_session(SessionRecord(ref=SessionRef(provider="bench", target="local",
        session_id=sid), created_at="2025-01-01T00:00:00Z", updated_at="2025-01-01T00:00:00Z",
        workspace="/tmp"))
for start in range(1, {events} + 1, 10):
    for sid in sessions:
        store.append([Event(event_id=f"ev_{{sid}}_{{i}}", sequence=i, session_id=sid,
            turn_id="t", harness="bench", timestamp="2025-01-01T00:00:00.000000Z",
            type="message.delta", payload=MessageDelta(text="x")) for i in range(start, start + 10)])
store.close()
print(began, time.time())
"""

#: The raw-driver line: the rows a worker's store wrote, written again by psycopg alone with its
#: fastest path (``COPY``), committed every :data:`RAW_BATCH` rows (the store's group commit).
RAW_WORKER = """
import json, sys, time
import psycopg

rows = json.load(open(sys.argv[1]))
began = time.time()
with psycopg.connect({url!r}) as connection:
    for first in range(0, len(rows), {batch}):
        with connection.cursor() as cursor:
            with cursor.copy("COPY ledger_events FROM STDIN") as copy:
                for row in rows[first : first + {batch}]:
                    copy.write_row(row)
        connection.commit()
print(began, time.time())
"""
RAW_BATCH = 500


def _processes(script: str, argv: list[list[str]]) -> float:
    """Seconds from the first process's first write to the last one's last commit (each prints
    when it began writing and when it was done: interpreter and import start-up left out)."""
    children = [
        subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)
        for args in argv
    ]
    spans = []
    for child in children:
        out, _ = child.communicate(timeout=600)
        if child.returncode != 0:
            raise RuntimeError("a worker failed")
        spans.append([float(word) for word in out.split()[-2:]])
    return max(end for _, end in spans) - min(began for began, _ in spans)


def workers_rate(processes: int = 4, events: int = 100) -> dict[str, float]:
    """``processes`` writer processes x 25 sessions x ``events`` events through the store, then
    the same rows by the raw driver into a fresh ledger: both rates (from the first write to
    the last commit), rows, gaps and duplicates of ours."""
    import json

    import psycopg

    directory = tempdir("workers")
    try:
        store = open_store("postgresql", directory)
        url = store.url
        store.close()
        script = textwrap.dedent(WORKER).format(url=url, events=events)
        elapsed = _processes(script, [[str(n)] for n in range(processes)])
        with psycopg.connect(url) as connection:
            rows, distinct = connection.execute(
                "SELECT count(*), count(DISTINCT event_id) FROM ledger_events"
            ).fetchone()  # type: ignore[misc]
            gaps = connection.execute(
                "SELECT count(*) FROM (SELECT session_id FROM ledger_events GROUP BY session_id "
                "HAVING max(sequence) <> count(*)) g"
            ).fetchone()[0]  # type: ignore[index]
            stored = connection.execute(
                "SELECT * FROM ledger_events ORDER BY session_id, sequence"
            ).fetchall()
        files = []
        for n in range(processes):
            path = os.path.join(directory, f"rows-{n}.json")
            with open(path, "w") as handle:
                json.dump([list(r) for r in stored if r[0].startswith(f"w{n}-")], handle)
            files.append([path])
        fresh = open_store("postgresql", directory)  # a new schema, as the store creates it
        raw_url = fresh.url
        fresh.close()
        raw_script = textwrap.dedent(RAW_WORKER).format(url=raw_url, batch=RAW_BATCH)
        raw_elapsed = _processes(raw_script, files)
    finally:
        rmtree(directory)
    return {
        "rate": rows / elapsed,
        "raw_rate": len(stored) / raw_elapsed,
        "rows": rows,
        "gaps": gaps,
        "duplicates": rows - distinct,
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--worker-events", type=int, default=400, help="events per session of each writer"
    )
    parser.add_argument("--only-workers", action="store_true", help="only the writers' line")
    args = parser.parse_args()
    from ledger_postgresql.testing import start

    server = start(durable=True)
    os.environ[ENV_POSTGRESQL] = server.url
    note = f"median of {args.runs}"
    try:
        print(f"# PostgreSQL {Path(server.bindir).parent.name} at 127.0.0.1:{server.port}")
        if not args.only_workers:
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
        got = workers_rate(4, args.worker_events)
        name = f"pg.workers.4x25x{args.worker_events}"
        figure(
            name,
            got["rate"],
            "events/s",
            "",
            f"{got['rows']:.0f} rows, {got['gaps']:.0f} gaps, {got['duplicates']:.0f} duplicates"
            " (4 processes, batches of 10)",
        )
        figure(f"{name}.raw", got["raw_rate"], "events/s", "", "the same rows: psycopg COPY")
        ratio = got["rate"] / got["raw_rate"]
        figure(f"{name}.ratio", ratio, "x", ">= 0.5", "ours / raw driver")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
