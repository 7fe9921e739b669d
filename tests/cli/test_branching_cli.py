"""``harness steer`` into a running ``harness run``; ``harness run --checkpoints``, then
``harness checkpoints``, ``diff``, ``fork`` and ``rewind`` on what it recorded."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

from tests.helpers import harness_cmd

SHAPER = """
from pathlib import Path

from harness_core import harness


@harness("shaper", features=("resume", "cancel", "steer", "fork", "checkpoint"))
async def run(message, session):
    if message.content == "wait":
        return "steered: " + " | ".join(await session.wait_steering())
    if message.content.startswith("write "):
        _, name, text = message.content.split(" ", 2)
        Path(session.workspace, name).write_text(text + "\\n")
    return " / ".join(text for role, text in session.history if role == "user")
"""


def _env(cli_env, tmp_path):
    install_harness(tmp_path / "site", "shaper", SHAPER)
    return {**cli_env, "PYTHONPATH": str(tmp_path / "site")}


def _events(env, session_id):
    listed = harness(env, "events", session_id, "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def test_steer_a_turn_another_process_runs(cli_env, tmp_path):
    env = _env(cli_env, tmp_path)
    process = subprocess.Popen(
        [*harness_cmd(), "run", "shaper", "wait", "--workspace", str(tmp_path), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        session_id = json.loads(process.stdout.readline())["session_id"]
        deadline = time.monotonic() + 30
        steered = None
        while time.monotonic() < deadline:
            steered = harness(env, "steer", session_id, "take the left road", "--json")
            if steered.returncode == 0:
                break
            time.sleep(0.2)  # until the run has started its turn
        assert steered is not None and steered.returncode == 0, steered.stderr
        assert json.loads(steered.stdout)["steered"] is True
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    events = _events(env, session_id)
    assert [e["payload"]["text"] for e in events if e["type"] == "turn.steered"] == [
        "take the left road"
    ]
    assert events[-1]["payload"]["text"] == "steered: take the left road"
    idle = harness(env, "steer", session_id, "too late")
    assert idle.returncode != 0 and "turn-not-found" in idle.stderr
    assert len(idle.stderr.strip().splitlines()) == 1


def test_checkpoints_diff_fork_and_rewind_commands(cli_env, tmp_path):
    env = _env(cli_env, tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def run(*words):
        done = harness(env, "run", *words, "--checkpoints", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[0])["session_id"]

    session_id = run("shaper", "write a.txt one", "--workspace", str(workspace))
    run("--session", session_id, "shaper", "write b.txt two")
    listed = harness(env, "checkpoints", session_id, "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["reason"] for r in rows] == ["turn-start", "turn-end", "turn-start", "turn-end"]
    diff = harness(env, "diff", session_id, "1")
    assert diff.returncode == 0, diff.stderr
    assert "+1 -0  a.txt" in diff.stdout and "+one" in diff.stdout and "b.txt" not in diff.stdout
    first_end = next(e for e in _events(env, session_id) if e["type"] == "turn.completed")
    forked = harness(env, "fork", session_id, "--at", first_end["event_id"], "--json")
    assert forked.returncode == 0, forked.stderr
    child = json.loads(forked.stdout)["session_id"]
    asked = harness(env, "run", "--session", child, "shaper", "and then", "--json")
    answer = json.loads(asked.stdout.splitlines()[-1])
    assert "write a.txt one / and then" in json.dumps(answer) and "b.txt" not in json.dumps(answer)
    rewound = harness(env, "rewind", session_id, rows[0]["checkpoint_id"][:20])
    assert rewound.returncode == 0, rewound.stderr
    assert "conversation (0 turns kept)" in rewound.stdout
    assert sorted(p.name for p in workspace.iterdir()) == []
    bad = harness(env, "rewind", session_id, "ckpt_deadbeef00")
    assert bad.returncode != 0 and "not a checkpoint of this session" in bad.stderr
    unknown = harness(env, "fork", session_id, "--at", "ev_nope_1")
    assert unknown.returncode != 0 and "ev_nope_1" in unknown.stderr
