"""The operator's view (issue 33): ``harness run`` turns on a PostgreSQL ledger while the
database restarts (``pg_ctl restart -m fast``) or every ledger connection is terminated
mid-turn, with a ``harness events --follow`` watching; and an outage longer than the window.

Each outage ``HARNESS_OUTAGE_ROUNDS`` times (default 3; the issue's drill is 20): every turn
ends with exactly one terminal, ``completed``; every event a run printed (delivered) is in the
ledger; no event twice; the follower prints every event once and exits 0 on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from harness_hookspecs import TERMINAL_TYPES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import terminate_everyone
from ledger_postgresql.testing import TemporaryPostgres

HARNESS = str(Path(sys.executable).with_name("harness"))
ROUNDS = int(os.environ.get("HARNESS_OUTAGE_ROUNDS", "3"))
#: A stdio-jsonl program: prompt "N PAUSE" streams N deltas PAUSE seconds apart, then ends.
PROGRAM = """\
import json, sys, time
request = json.loads(sys.stdin.readline())
count, pause = request["prompt"].split()
for index in range(int(count)):
    print(json.dumps({"type": "message.delta", "text": f"{index} "}), flush=True)
    time.sleep(float(pause))
print(json.dumps({"type": "turn.completed", "text": "done"}), flush=True)
"""


class Cli:
    def __init__(self, tmp_path: Path, url: str, **extra: str) -> None:
        program = tmp_path / "paced.py"
        program.write_text(PROGRAM)
        self.config = f"command={json.dumps([sys.executable, str(program)])}"
        self.env = {k: v for k, v in os.environ.items() if k != "HARNESS_CORE_PLUGINS"}
        self.env.update(
            HARNESS_LEDGER=url,
            HARNESS_STATE_DIR=str(tmp_path / "state"),
            HARNESS_CACHE_DIR=str(tmp_path / "cache"),
            **extra,
        )
        self.cwd = tmp_path

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [HARNESS, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )

    def run_turn(self, prompt: str, *session: str) -> subprocess.Popen[str]:
        return self.start("run", "stdio-jsonl", prompt, "--json", "--config", self.config, *session)

    def events(self, session_id: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            [HARNESS, "events", session_id, "--json"],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]


class Lines(threading.Thread):
    """Reads a process's stdout lines as they come."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.process = process
        self.lines: list[str] = []
        self.start()

    def run(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.lines) < count:
            assert self.process.poll() is None or self.is_alive(), "the output ended early"
            assert time.monotonic() < deadline, f"only {len(self.lines)} lines"
            time.sleep(0.02)


def finish(process: subprocess.Popen[str], lines: Lines) -> tuple[int, list[str]]:
    code = process.wait(120)
    lines.join(30)
    assert process.stderr is not None
    return code, process.stderr.read().splitlines()


def one_terminal_per_turn(events: list[dict[str, Any]]) -> Counter[str]:
    """Each turn's terminal count is 1; the terminals' types, counted."""
    terminals = [e for e in events if e["type"] in TERMINAL_TYPES]
    per_turn = Counter(e["turn_id"] for e in terminals)
    turns = {e["turn_id"] for e in events if e["turn_id"] is not None}
    assert turns == set(per_turn) and set(per_turn.values()) == {1}, per_turn
    return Counter(e["type"] for e in terminals)


@pytest.mark.parametrize("outage", ["pg_ctl restart -m fast", "pg_terminate_backend"])
def test_turns_and_a_follower_ride_out_the_database(
    restartable_server: TemporaryPostgres, restartable_url: str, tmp_path: Path, outage: str
) -> None:
    cli = Cli(tmp_path, restartable_url)
    opened = cli.run_turn("1 0")
    code, errors = finish(opened, first := Lines(opened))
    assert code == 0, errors
    session_id = json.loads(first.lines[0])["session_id"]
    follower = cli.start("events", session_id, "--follow", "--json")
    followed = Lines(follower)
    delivered = [json.loads(line) for line in first.lines]
    seconds = []
    for _ in range(ROUNDS):
        run = cli.run_turn("40 0.05", "--session", session_id)
        lines = Lines(run)
        lines.wait_for(6)  # mid-turn: deltas are streaming
        began = time.monotonic()
        if outage == "pg_terminate_backend":
            assert terminate_everyone(restartable_server) >= 2
        else:
            restartable_server.pg_ctl("restart")
        code, errors = finish(run, lines)
        seconds.append(time.monotonic() - began)
        assert code == 0, errors
        assert errors == [], errors
        turn = [json.loads(line) for line in lines.lines]
        assert turn[-1]["type"] == "turn.completed"
        delivered += turn
    stored = cli.events(session_id)
    assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
    assert len({e["event_id"] for e in stored}) == len(stored)
    kept = {e["event_id"]: e for e in stored}
    assert [e for e in delivered if kept.get(e["event_id"]) != e] == []  # none lost
    assert one_terminal_per_turn(stored) == Counter({"turn.completed": ROUNDS + 1})
    followed.wait_for(len(stored))
    follower.send_signal(signal.SIGINT)
    code, errors = finish(follower, followed)
    assert code == 0, errors
    assert [json.loads(line)["event_id"] for line in followed.lines] == list(kept)
    print(f"{outage}: {ROUNDS} turns completed, {len(stored)} events, each once; "
          f"turn end after the outage began: {min(seconds):.2f}-{max(seconds):.2f} s")  # fmt: skip


def test_an_outage_longer_than_the_window_is_one_line_and_the_next_run_closes_the_turn(
    restartable_server: TemporaryPostgres, restartable_url: str, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, restartable_url, HARNESS_LEDGER_RETRY_WINDOW="1")
    opened = cli.run_turn("1 0")
    code, errors = finish(opened, first := Lines(opened))
    assert code == 0, errors
    session_id = json.loads(first.lines[0])["session_id"]
    run = cli.run_turn("100 0.05", "--session", session_id)
    lines = Lines(run)
    lines.wait_for(6)
    restartable_server.pg_ctl("stop")
    try:
        code, errors = finish(run, lines)
    finally:
        restartable_server.pg_ctl("start")
    assert code == 74, errors
    assert len(errors) == 1 and errors[0].startswith("harness: error: ledger-failed: "), errors
    delivered = [json.loads(line) for line in first.lines + lines.lines]
    again = cli.run_turn("1 0", "--session", session_id)
    code, errors = finish(again, Lines(again))
    assert code == 0, errors
    stored = cli.events(session_id)
    kept = {e["event_id"]: e for e in stored}
    assert [e for e in delivered if kept.get(e["event_id"]) != e] == []
    assert [e["sequence"] for e in stored] == list(range(1, len(stored) + 1))
    terminals = one_terminal_per_turn(stored)
    assert terminals == Counter({"turn.completed": 2, "turn.failed": 1}), terminals
    failed = next(e for e in stored if e["type"] == "turn.failed")
    assert failed["payload"]["reason"] in ("interrupted", "ledger-failed")
    print(f"outage past the window: the turn ended turn.failed({failed['payload']['reason']})")
