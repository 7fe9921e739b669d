"""The SQLite ledger's limit by table layout: the raw driver alone writing the same event rows
(WAL, ``synchronous=NORMAL``) into the ``events`` table as built and into two other layouts,
appended the way one turn writes (a session's events together) and the way many turns
streaming at once write (interleaved across sessions), with the time to read one session back.

Why (issue 34): with a thousand turns streaming, every commit holds about one event per
session, and each lands on a B-tree page of its own in the session-clustered table and again in
the ``event_id`` index; the driver alone then writes ~10,000 events/s here, below what such a
host offers. The other layouts show what the table's shape costs:

- ``as built``: ``WITHOUT ROWID``, primary key ``(session_id, sequence)``, ``event_id UNIQUE``;
- ``rowid``: a rowid table (rows appended in order) with the same two unique keys;
- ``rowid, no event_id index``: the same without the ``event_id`` index (event ids would then
  have to be kept unique another way, e.g. per session prefix).

    python benchmarks/sqlite_layout.py [--sessions 1000] [--events 100] [--per-commit 20,1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import positive_int, rmtree, tempdir


def layouts() -> dict[str, str]:
    from harness_core.ledger import open_ledger

    directory = tempdir("sqlite-layout-built")
    try:  # the table as the store makes it
        path = os.path.join(directory, "ledger.sqlite")
        open_ledger(f"sqlite://{path}").close()
        with sqlite3.connect(path) as connection:
            built = connection.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"
            ).fetchone()[0]
    finally:
        rmtree(directory)
    rowid = built.replace(") WITHOUT ROWID", ")")  # the same columns and keys
    event_id = "event_id          TEXT NOT NULL UNIQUE"
    if rowid == built or event_id not in built:
        raise SystemExit("the events table is no longer what this script reshapes")
    return {
        "as built": built,
        "rowid": rowid,
        "rowid, no event_id index": rowid.replace(event_id, "event_id          TEXT NOT NULL"),
    }


def rows(sessions: int, events: int) -> list[tuple[object, ...]]:
    """Events as a turn records them (ids, timestamps, a delta's payload), interleaved: the
    first event of every session, then the second, ..."""
    from harness_core.digests import event_id_prefix

    ids = [f"{index:032x}" for index in range(1, sessions + 1)]
    prefixes = [event_id_prefix(session_id) for session_id in ids]
    payload = json.dumps({"text": "1733369820.123456", "role": "assistant"})
    return [
        (
            session_id,
            sequence,
            prefix + str(sequence),
            "turn_1",
            "message.delta",
            "2026-12-05T03:37:00.123456Z",
            "bench",
            None,
            1,
            payload,
        )
        for sequence in range(1, events + 1)
        for session_id, prefix in zip(ids, prefixes, strict=True)
    ]


def measure(table: str, batch: list[tuple[object, ...]], per_commit: int) -> tuple[float, float]:
    """Rows/s written, and ms to read one session back (median of a hundred)."""
    directory = tempdir("sqlite-layout")
    try:
        connection = sqlite3.connect(os.path.join(directory, "ledger.sqlite"))
        connection.isolation_level = None
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute(table)
        insert = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        start = time.perf_counter()
        for first in range(0, len(batch), per_commit):
            connection.execute("BEGIN")
            connection.executemany(insert, batch[first : first + per_commit])
            connection.execute("COMMIT")
        rate = len(batch) / (time.perf_counter() - start)
        sessions = sorted({row[0] for row in batch})[:100]
        reads = []
        for session_id in sessions:
            began = time.perf_counter()
            connection.execute(
                "SELECT * FROM events WHERE session_id = ? AND sequence > ? ORDER BY sequence",
                (session_id, 0),
            ).fetchall()
            reads.append(time.perf_counter() - began)
        connection.close()
        reads.sort()
        return rate, reads[len(reads) // 2] * 1000
    finally:
        rmtree(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=positive_int, default=1000)
    parser.add_argument("--events", type=positive_int, default=100, help="per session")
    parser.add_argument("--per-commit", default="20,1000", help="rows a transaction, interleaved")
    args = parser.parse_args()
    interleaved = rows(args.sessions, args.events)
    together = sorted(interleaved, key=lambda row: (str(row[0]), int(str(row[1]))))
    print(f"load average {os.getloadavg()[0]:.1f}; {len(interleaved):,} events")
    for name, table in layouts().items():
        rate, read = measure(table, together, 512)
        print(f"{name}: a session's events together, 512 a commit: {rate:,.0f} ev/s")
        for per_commit in (int(n) for n in args.per_commit.split(",")):
            rate, read = measure(table, interleaved, per_commit)
            print(
                f"{name}: interleaved across {args.sessions:,} sessions, {per_commit} a commit: "
                f"{rate:,.0f} ev/s; one session read back {read:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
