"""4 processes x 25 sessions x 100 events into one PostgreSQL ledger: no gap, no duplicate."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from ledger_postgresql.store import PostgresStore

HELPERS = str(Path(__file__).resolve().parent)
PROCESSES, SESSIONS, EVENTS = 4, 25, 100

WORKER = """
import sys
sys.path.insert(0, {helpers!r})
from helpers import event, record
from ledger_postgresql.store import PostgresStore

store = PostgresStore({url!r})
worker = int(sys.argv[1])
sessions = [f"w{{worker}}-s{{n}}" for n in range(25)]
for sid in sessions:
    store.create_session(record(sid))
    store.claim(sid)
for start in range(1, 101, 10):  # interleaved batches across this worker's sessions
    for sid in sessions:
        store.append([event(i, f"{{sid}}:{{i}}", session_id=sid) for i in range(start, start + 10)])
store.close()
"""

# All workers append to one session, unclaimed (a claim would fence the others): each reads the
# last sequence, appends the next one, and tries again when another worker took it first.
SHARED = """
import sys
sys.path.insert(0, {helpers!r})
from harness_hookspecs import HarnessError
from helpers import event
from ledger_postgresql.store import PostgresStore

store = PostgresStore({url!r})
worker = sys.argv[1]
written = 0
while written < 50:
    sequence = store.last_sequence("shared") + 1
    try:
        store.append([event(sequence, f"worker {{worker}}", session_id="shared", writer=worker)])
        store.flush()
        written += 1
    except HarnessError:
        pass  # another worker took that sequence: read the new last and try again
store.close()
"""


def run_workers(code: str, url: str) -> None:
    script = textwrap.dedent(code).format(helpers=HELPERS, url=url)
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(n)], stderr=subprocess.PIPE)
        for n in range(PROCESSES)
    ]
    for worker in workers:
        _, stderr = worker.communicate(timeout=240)
        assert worker.returncode == 0, stderr.decode()[-2000:]


@pytest.mark.slow
def test_four_processes_one_ledger_no_gap_no_duplicate(postgresql_ledger_url: str) -> None:
    url = postgresql_ledger_url
    PostgresStore(url).close()  # migrate once up front; the workers' opens are then no-ops
    run_workers(WORKER, url)
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT session_id, count(*), min(sequence), max(sequence), "
            "count(DISTINCT event_id), bool_and(payload LIKE '%%' || session_id || ':%%') "
            "FROM ledger_events GROUP BY session_id"
        ).fetchall()
        total = connection.execute("SELECT count(*) FROM ledger_events").fetchone()
        sessions = connection.execute(
            "SELECT count(*) FROM ledger_sessions WHERE last_sequence = 100 AND writer_epoch = 1 "
            "AND record IS NOT NULL"
        ).fetchone()
    assert total == (PROCESSES * SESSIONS * EVENTS,)
    assert len(rows) == PROCESSES * SESSIONS
    assert all(row[1:] == (EVENTS, 1, EVENTS, EVENTS, True) for row in rows)  # 0 gaps, 0 dups
    assert sessions == (PROCESSES * SESSIONS,)


@pytest.mark.slow
def test_four_processes_racing_on_one_session(postgresql_ledger_url: str) -> None:
    url = postgresql_ledger_url
    PostgresStore(url).close()
    run_workers(SHARED, url)
    store = PostgresStore(url)
    try:
        events = store.events("shared")
    finally:
        store.close()
    assert [e.sequence for e in events] == list(range(1, PROCESSES * 50 + 1))
    texts = [e.payload.text for e in events]  # type: ignore[attr-defined]
    assert sorted(texts.count(f"worker {n}") for n in range(PROCESSES)) == [50] * PROCESSES
