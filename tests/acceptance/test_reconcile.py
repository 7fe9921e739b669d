"""``harness reconcile`` (issue 33): the turn a SIGKILLed ``harness run`` left open is ended
``interrupted`` (SQLite and PostgreSQL); a session whose writer lives is left alone; a dry run
writes nothing; a second pass finds nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from ..ledger.ledger_samples import open_store as open_ledger
from ..ledger.ledger_samples import url_for, wait_unclaimed
from .test_crash import HARNESS, STREAM, _command, _env, _killed_run


def _reconcile(env: dict[str, str], *extra: str) -> tuple[list[dict], str]:
    done = subprocess.run(
        [*HARNESS, "reconcile", "--json", *extra], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr.strip()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_reconcile_ends_the_turn_of_a_killed_writer_and_leaves_a_live_one(kind, tmp_path, request):
    program = tmp_path / "stream.py"
    program.write_text(STREAM)
    ledger = url_for(kind, tmp_path, request) if kind == "postgresql" else (
        f"sqlite:///{tmp_path}/ledger.sqlite")  # fmt: skip
    env = _env(tmp_path, ledger)
    marker = f"reconcile-{kind}-{os.getpid()}"
    killed = _killed_run(env, program, marker, after=20)[0]["session_id"]
    store = open_ledger(ledger)
    try:
        wait_unclaimed(store, killed)
    finally:
        store.close()
    live = subprocess.Popen(  # a writer that lives: its session is not an orphan
        [*HARNESS, "run", "stdio-jsonl", "go", "--json", "--config", _command(program, marker)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        assert live.stdout is not None
        running = json.loads(live.stdout.readline())["session_id"]
        for _ in range(5):
            live.stdout.readline()  # its turn is under way
        planned, summary = _reconcile(env, "--dry-run")
        assert [(f["session_id"], f["closed"], f["reason"]) for f in planned] == [
            (killed, False, "writer-gone")
        ]
        assert planned[0]["dry_run"] is True and summary == "1 orphan would end"
        found, summary = _reconcile(env)
        assert [f["session_id"] for f in found] == [killed] and summary == "1 orphan ended"
        assert _reconcile(env)[0] == []  # nothing left
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
    store = open_ledger(ledger)
    try:
        events = store.events(killed)
        assert store.get_session(killed).status != "closed"  # resumable: only the turn ended
        assert all(e.type != "turn.failed" for e in store.events(running))
    finally:
        store.close()
    ends = [e for e in events if e.type in ("turn.completed", "turn.failed", "turn.cancelled")]
    assert [(e.type, e.payload.reason, e.turn_id) for e in ends] == [
        ("turn.failed", "interrupted", found[0]["turn_id"])
    ]
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
