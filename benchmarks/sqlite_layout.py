"""The SQLite ledger's limit by table layout: the raw driver alone writing the same event rows
(WAL, ``synchronous=NORMAL``) into the ledger's tables as built and into two other layouts,
appended the way one turn writes (a session's events together) and the way many turns
streaming at once write (interleaved across sessions), with the time to read one session back.

Why (issue 34): with a thousand turns streaming, every commit holds about one event per
session, and each landed on a B-tree page of its own in version 4's session-clustered table and
again in its ``event_id`` index: the driver alone wrote ~10,000 events/s there. Version 5 appends
rows in the order written and keeps ids unique by session prefix (``sqlite_schema``):

- ``version 4``: ``WITHOUT ROWID``, primary key ``(session_id, sequence)``, ``event_id UNIQUE``;
- ``as built``: the store's tables now (version 5: a rowid table, the ``events_listed``
  trigger checking each id against its session's prefix, which the store writes when it
  creates the session, done here before the clock starts);
- ``as built, no id check``: the same without the trigger (ids unchecked: the floor).

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

# Version 4's events table, as that version made it (for the comparison only).
VERSION_4 = """CREATE TABLE events (
    session_id TEXT NOT NULL, sequence INTEGER NOT NULL, event_id TEXT NOT NULL UNIQUE,
    turn_id TEXT, type TEXT NOT NULL, timestamp TEXT NOT NULL, harness TEXT NOT NULL,
    parent_event_id TEXT, protocol_version INTEGER NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)) WITHOUT ROWID"""


def layouts() -> dict[str, list[str]]:
    """Each layout's statements (the built ones read off a ledger the store creates)."""
    from harness_core.ledger import open_ledger

    directory = tempdir("sqlite-layout-built")
    try:
        path = os.path.join(directory, "ledger.sqlite")
        open_ledger(f"sqlite://{path}").close()
        with sqlite3.connect(path) as connection:
            built = [
                row[0]
                for row in connection.execute(
                    "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
                )
            ]
    finally:
        rmtree(directory)
    unchecked = [sql for sql in built if "events_listed" not in sql]
    if len(unchecked) == len(built) or not any("event_prefixes" in sql for sql in built):
        raise SystemExit("the ledger's tables are no longer what this script compares")
    return {"version 4": [VERSION_4], "as built": built, "as built, no id check": unchecked}


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


def measure(
    layout: list[str], batch: list[tuple[object, ...]], per_commit: int
) -> tuple[float, float]:
    """Rows/s written, and ms to read one session back (median of a hundred)."""
    from harness_core.digests import event_id_prefix

    directory = tempdir("sqlite-layout")
    try:
        connection = sqlite3.connect(os.path.join(directory, "ledger.sqlite"))
        connection.isolation_level = None
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        for statement in layout:
            connection.execute(statement)
        if any("event_prefixes" in statement for statement in layout):  # as create_session
            sessions = sorted({str(row[0]) for row in batch})
            connection.executemany(
                "INSERT INTO event_prefixes VALUES (?, ?, 0)",
                [(session_id, event_id_prefix(session_id)) for session_id in sessions],
            )
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
    for name, layout in layouts().items():
        rate, read = measure(layout, together, 512)
        print(f"{name}: a session's events together, 512 a commit: {rate:,.0f} ev/s")
        for per_commit in (int(n) for n in args.per_commit.split(",")):
            rate, read = measure(layout, interleaved, per_commit)
            print(
                f"{name}: interleaved across {args.sessions:,} sessions, {per_commit} a commit: "
                f"{rate:,.0f} ev/s; one session read back {read:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
