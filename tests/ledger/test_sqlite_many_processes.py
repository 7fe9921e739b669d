"""Many processes on one SQLite ledger file: WAL + busy timeout, no "database is locked"."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness_core.ledger.sqlite import SqliteStore

HELPERS = str(Path(__file__).resolve().parent)
PROCESSES, SESSIONS, EVENTS = 8, 5, 200

WORKER = """
import sys
sys.path.insert(0, {helpers!r})
from ledger_samples import make_event, make_record
from harness_core.ledger.sqlite import SqliteStore

worker = sys.argv[1]
store = SqliteStore({path!r})
for n in range({sessions}):
    sid = f"w{{worker}}-{{n}}"
    store.create_session(make_record(sid))
    for sequence in range(1, {events} + 1):
        store.append((make_event(sequence, session_id=sid),))
        if sequence % 25 == 0:
            store.flush()  # many small commits: the processes contend for the write lock
    store.events(sid, limit=1)  # reads interleave with the other processes' writes
store.close()
"""


@pytest.mark.slow
def test_many_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.sqlite")
    SqliteStore(path).close()
    code = textwrap.dedent(WORKER).format(
        helpers=HELPERS, path=path, sessions=SESSIONS, events=EVENTS
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for n in range(PROCESSES)
    ]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err.decode()[-2000:]
        assert b"locked" not in out + err
    store = SqliteStore(path)
    try:
        assert len(store.list_sessions()) == PROCESSES * SESSIONS
        for record in store.list_sessions():
            events = store.events(record.session_id)
            assert [e.sequence for e in events] == list(range(1, EVENTS + 1))
    finally:
        store.close()
