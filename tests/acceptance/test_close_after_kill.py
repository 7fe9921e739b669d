"""A session opened with ``config`` can be resumed and closed after its process was killed
(issue 26, item 2): the config is kept with the session (a secret as a reference, never its
plaintext), ``harness close`` / serve's close end the killed turn with exactly one terminal even
when the harness cannot start again, and a restarted ``serve`` shows that turn interrupted."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import harness_cmd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_run import harness

COMMAND = [sys.executable, "-m", "harness_stdio_jsonl.reference"]
SECRET = "sk-ant-" + "q7" * 20  # a key shape: the redactor knows it without registration


def _start_run(cli_env, workspace, *options):
    return subprocess.Popen(
        [
            *harness_cmd(),
            "run",
            "stdio-jsonl",
            "sleep 60",
            "--json",
            "--workspace",
            str(workspace),
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=cli_env,
        start_new_session=True,
    )


def _kill_mid_turn(process) -> str:
    """SIGKILL ``process`` once its turn has started; the session id."""
    session_id = None
    for line in process.stdout:
        event = json.loads(line)
        session_id = event["session_id"]
        if event["type"] == "turn.started":
            break
    assert session_id is not None
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)
    return session_id


def _events(cli_env, session_id):
    out = harness(cli_env, "events", session_id, "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _assert_closed_with_one_terminal(cli_env, session_id):
    events = _events(cli_env, session_id)
    turns = {e["turn_id"] for e in events if e["turn_id"]}
    assert len(turns) == 1
    terminals = [
        e for e in events if e["type"] in ("turn.completed", "turn.failed", "turn.cancelled")
    ]
    assert [(e["type"], e["payload"]["reason"]) for e in terminals] == [
        ("turn.failed", "interrupted")
    ]
    assert events[-1]["type"] == "session.closed"
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    listing = harness(cli_env, "sessions", "--json")
    (record,) = [json.loads(x) for x in listing.stdout.splitlines() if session_id in x]
    assert record["status"] == "closed"
    return events


def test_config_is_kept_and_close_after_kill_9_ends_the_turn_once(cli_env, tmp_path):
    run = _start_run(cli_env, tmp_path, "--config", f"command={json.dumps(COMMAND)}")
    session_id = _kill_mid_turn(run)
    export = json.loads(harness(cli_env, "export", session_id).stdout)
    assert export["session"]["config"] == {"command": COMMAND}
    closed = harness(cli_env, "close", session_id)
    assert closed.returncode == 0, closed.stderr
    events = _assert_closed_with_one_terminal(cli_env, session_id)
    # harness close records session.closed alone, never a session.resumed before it (issue 28);
    # that the kept config starts the harness again: test_a_secret_in_config_is_kept_as_a_reference
    assert "session.resumed" not in [e["type"] for e in events]
    again = harness(cli_env, "close", session_id)
    assert again.returncode == 0 and "already closed" in again.stdout


def test_close_needs_no_harness_that_can_start(cli_env, tmp_path):
    # the command comes from the environment of the killed run only: nothing can start it again
    env = dict(cli_env, HARNESS_JSONL_COMMAND=" ".join(COMMAND))
    run = _start_run(env, tmp_path)
    session_id = _kill_mid_turn(run)
    resumed = harness(cli_env, "run", "stdio-jsonl", "hi", "--session", session_id)
    assert resumed.returncode != 0  # the harness cannot start: stdio-jsonl needs a command
    closed = harness(cli_env, "close", session_id)
    assert closed.returncode == 0, closed.stderr
    events = _assert_closed_with_one_terminal(cli_env, session_id)
    assert "session.resumed" not in [e["type"] for e in events]


def test_a_secret_in_config_is_kept_as_a_reference(cli_env, tmp_path):
    env = dict(cli_env, MY_KEY_FOR_TEST=SECRET)
    # stdio-jsonl declares its config keys (command, mode, permissions): the secret rides in the
    # command's argv, which the reference program ignores
    command = [*COMMAND, "--api-key", SECRET]
    run = _start_run(env, tmp_path, "--config", f"command={json.dumps(command)}")
    session_id = _kill_mid_turn(run)
    export = harness(env, "export", session_id)
    assert SECRET not in export.stdout
    stored = json.loads(export.stdout)["session"]["config"]
    reference = {"$secret": "env:MY_KEY_FOR_TEST"}
    assert stored == {"command": [*COMMAND, "--api-key", reference]}
    ledger = Path(cli_env["HARNESS_LEDGER"].removeprefix("sqlite:///"))
    for path in ledger.parent.glob(ledger.name + "*"):
        assert SECRET.encode() not in path.read_bytes(), path
    # resolved again from the environment: the resumed harness runs
    resumed = harness(env, "run", "stdio-jsonl", "hi", "--session", session_id, "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["type"] == "turn.completed"


class Serve:
    def __init__(self, tmp_path, env):
        self.process = subprocess.Popen(
            [*harness_cmd(), "serve", "--port", "0", "--token-env", "T"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=dict(env, T="close-after-kill-token-0123456789"),
            start_new_session=True,
        )
        first = self.process.stdout.readline()
        assert "listening on" in first, first
        self.port = int(first.rsplit(":", 1)[1].strip().rstrip("/"))

    def call(self, method, path, body=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {
            "Authorization": "Bearer close-after-kill-token-0123456789",
            "Content-Type": "application/json",
        }
        connection.request(method, path, None if body is None else json.dumps(body), headers)
        response = connection.getresponse()
        data = json.loads(response.read())
        connection.close()
        return response.status, data

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


def test_serve_restart_shows_the_turn_interrupted_and_closes_it(cli_env, tmp_path):
    first = Serve(tmp_path, cli_env)
    try:
        status, opened = first.call(
            "POST",
            "/api/sessions",
            {"harness": "stdio-jsonl", "workspace": str(tmp_path), "config": {"command": COMMAND}},
        )
        assert status == 201, opened
        session_id = opened["ref"]["session_id"]
        status, _ = first.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "sleep 60", "stream": False}
        )
        assert status == 202
        deadline = time.monotonic() + 20
        while first.call("GET", f"/api/sessions/{session_id}")[1]["last_turn"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        first.kill()
    second = Serve(tmp_path, cli_env)
    try:
        status, view = second.call("GET", f"/api/sessions/{session_id}")
        assert status == 200
        assert view["last_turn"] == "interrupted" and view["running_turn"] is None
        assert view["config"] == {"command": COMMAND}
        status, answer = second.call("POST", f"/api/sessions/{session_id}/close")
        assert status == 200, answer
    finally:
        second.kill()
    _assert_closed_with_one_terminal(cli_env, session_id)
