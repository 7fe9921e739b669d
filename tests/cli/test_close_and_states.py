"""A session says what it is doing - running, idle (open, waiting for its next turn) or closed -
and ``harness close`` records ``session.closed`` and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

from tests.helpers import harness_cmd

# Runs until the file its prompt names exists (at most 60 s): the test reads the state while it
# runs, however long two `harness sessions` take on a loaded machine, then lets it end.
SLOW = """
import os
import anyio

async def run(message, session):
    with anyio.fail_after(60):
        while not os.path.exists(message.content):
            await anyio.sleep(0.05)
    return "slept"
"""


def sessions(env):
    listed = harness(env, "sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    return {row["ref"]["session_id"]: row for row in map(json.loads, listed.stdout.splitlines())}


def test_close_records_only_session_closed(cli_env, tmp_path):
    run = harness(cli_env, "run", "echo", "hi", "--workspace", str(tmp_path), "--json")
    session_id = json.loads(run.stdout.splitlines()[0])["session_id"]
    assert sessions(cli_env)[session_id]["state"] == "idle"
    closed = harness(cli_env, "close", session_id)
    assert closed.returncode == 0, closed.stderr
    events = harness(cli_env, "events", session_id, "--json").stdout.splitlines()
    types = [json.loads(line)["type"] for line in events]
    assert types[0] == "session.opened" and types[-1] == "session.closed"
    assert types.count("session.closed") == 1
    assert "session.resumed" not in types
    row = sessions(cli_env)[session_id]
    assert row["state"] == "closed" and row["status"] == "closed"
    (line,) = [
        x for x in harness(cli_env, "sessions").stdout.splitlines() if x.startswith(session_id)
    ]
    assert line.split()[1:3] == ["echo", "closed"]


def test_a_session_is_running_while_its_turn_runs_then_idle(cli_env, tmp_path):
    install_harness(tmp_path / "site", "slow", SLOW)
    env = {**cli_env, "PYTHONPATH": str(tmp_path / "site")}
    gate = tmp_path / "turn-may-end"
    process = subprocess.Popen(
        [*harness_cmd(), "run", "slow", str(gate), "--workspace", str(tmp_path), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        session_id = json.loads(process.stdout.readline())["session_id"]
        deadline = time.monotonic() + 30
        state = None
        while time.monotonic() < deadline and process.poll() is None:
            state = sessions(env).get(session_id, {}).get("state")
            if state == "running":
                break
            time.sleep(0.2)
        assert state == "running"
        table = harness(env, "sessions").stdout
        assert any(
            line.startswith(session_id) and " running " in line for line in table.splitlines()
        )
        gate.touch()
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert sessions(env)[session_id]["state"] == "idle"
