"""Opening a SQLite ledger checks every page (``PRAGMA quick_check``) unless the file is exactly
as a store left it after a clean close: a ledger of 100,000 sessions is not read whole on every
``harness run`` (issue 34), and a file anyone else touched since is checked as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_hookspecs import HarnessError

import harness_core.ledger.sqlite as sqlite_module
from harness_core.ledger.sqlite import SqliteStore
from harness_core.ledger.sqlite_schema import CHECKED_SUFFIX, unchanged

from .ledger_samples import make_event, make_record


@pytest.fixture
def checks(monkeypatch):
    """Each open's quick_check flag, in order."""
    seen: list[bool] = []
    real = sqlite_module.validate

    def spy(connection, *, quick_check=True):
        seen.append(quick_check)
        return real(connection, quick_check=quick_check)

    monkeypatch.setattr(sqlite_module, "validate", spy)
    return seen


def _write(path: Path, session_id: str) -> None:
    store = SqliteStore(str(path))
    store.create_session(make_record(session_id))
    store.claim(session_id)
    store.append([make_event(1, session_id=session_id), make_event(2, session_id=session_id)])
    store.close()


def test_a_file_left_by_a_clean_close_is_not_read_whole_again(tmp_path, checks):
    path = tmp_path / "l.sqlite"
    _write(path, "s1")
    assert unchanged(str(path)) and Path(str(path) + CHECKED_SUFFIX).exists()
    _write(path, "s2")  # as the first left it: no check
    assert checks == [True, False]
    store = SqliteStore(str(path))
    assert [e.sequence for e in store.events("s1")] == [1, 2]
    store.close()


def test_a_file_someone_else_touched_is_checked_and_a_damaged_one_refused(tmp_path, checks):
    path = tmp_path / "l.sqlite"
    _write(path, "s1")
    with open(path, "r+b") as handle:  # a byte changed behind the store's back
        handle.seek(path.stat().st_size // 2)
        handle.write(b"\xff" * 4096)
    assert not unchanged(str(path))
    with pytest.raises(HarnessError) as damaged:
        SqliteStore(str(path))
    assert damaged.value.reason == "ledger-failed"
    assert checks == [True, True]


def test_a_second_writer_after_the_close_makes_the_next_open_check(tmp_path, checks):
    path = tmp_path / "l.sqlite"
    first = SqliteStore(str(path))
    second = SqliteStore(str(path))
    first.close()  # leaves its marker while the second still writes
    second.create_session(make_record("s2"))
    second.flush()
    assert not unchanged(str(path))
    second.close()
    assert unchanged(str(path))  # the last to close says how it left the file


def test_a_store_whose_write_failed_leaves_the_next_open_a_full_check(tmp_path, checks):
    import sqlite3

    path = tmp_path / "l.sqlite"
    _write(path, "s1")
    with sqlite3.connect(path) as connection:  # another program refuses new events
        connection.executescript(
            "CREATE TRIGGER no_events BEFORE INSERT ON events "
            "BEGIN SELECT RAISE(ABORT, 'frozen'); END;"
        )
    store = SqliteStore(str(path))
    store.create_session(make_record("s2"))
    store.claim("s2")
    store.append([make_event(1, session_id="s2")])
    with pytest.raises(HarnessError):
        store.flush()
    store.close()
    assert not Path(str(path) + CHECKED_SUFFIX).exists()
    SqliteStore(str(path)).close()
    assert checks[-1] is True


_KILLED_WRITER = """
import sys
sys.path.insert(0, sys.argv[2])
from ledger_samples import make_event, make_record
from harness_core.ledger.sqlite import SqliteStore

store = SqliteStore(sys.argv[1])
store.create_session(make_record("s2"))
store.claim("s2")
store.append([make_event(n, session_id="s2") for n in (1, 2, 3)])
store.flush()
print("flushed", flush=True)
sys.stdin.read()  # killed here, never closed
"""


def test_a_writer_killed_before_its_close_leaves_the_next_open_a_full_check(tmp_path, checks):
    import signal
    import subprocess
    import sys

    path = tmp_path / "l.sqlite"
    _write(path, "s1")  # a clean close: the marker says how it left the file
    assert unchanged(str(path))
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path), str(Path(__file__).parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "flushed"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    assert not unchanged(str(path))  # the killed writer changed the file after the marker
    store = SqliteStore(str(path))
    try:
        assert checks == [True, True]  # the first open here, then the full check after the kill
        assert [e.sequence for e in store.events("s2")] == [1, 2, 3]
        assert [e.sequence for e in store.events("s1")] == [1, 2]
    finally:
        store.close()
