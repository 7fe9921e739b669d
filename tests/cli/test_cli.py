"""The `harness` CLI end to end, in subprocesses, against the installed echo plugin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from ..helpers import harness_cmd


def harness(env, *args, timeout=60):
    return subprocess.run(
        [*harness_cmd(), *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_plugins_lists_echo(cli_env):
    out = harness(cli_env, "plugins")
    assert out.returncode == 0
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["PLUGIN", "DISTRIBUTION", "PROVIDES"]
    (echo,) = [row for row in rows if row.split()[0] == "echo"]
    assert "harnessplane-echo" in echo and "harness:echo" in echo


def test_describe_json(cli_env):
    out = harness(cli_env, "describe", "echo", "--json")
    data = json.loads(out.stdout)
    assert data["provider"] == "echo"
    assert "local" in data["targets"]


def test_run_then_events_read_back_from_sqlite_after_exit(cli_env, tmp_path):
    run = harness(cli_env, "run", "echo", "hi there", "--workspace", str(tmp_path), "--json")
    assert run.returncode == 0, run.stderr
    streamed = [json.loads(line) for line in run.stdout.splitlines()]
    assert [e["type"] for e in streamed][-1] == "turn.completed"
    session_id = streamed[0]["session_id"]
    back = harness(cli_env, "events", session_id, "--json")
    assert back.returncode == 0, back.stderr
    stored = [json.loads(line) for line in back.stdout.splitlines()]
    assert stored == streamed
    readable = harness(cli_env, "events", session_id)
    assert "turn.completed" in readable.stdout and "echo: hi there" in readable.stdout

    again = harness(cli_env, "run", "echo", "second", "--session", session_id, "--json")
    assert again.returncode == 0, again.stderr
    second = [json.loads(line) for line in again.stdout.splitlines()]
    assert second[0]["type"] == "session.resumed"
    assert second[0]["sequence"] == stored[-1]["sequence"] + 1

    listed = harness(cli_env, "sessions", "--json").stdout.splitlines()
    sessions = [json.loads(line) for line in listed]
    assert session_id in [s["ref"]["session_id"] for s in sessions]

    bundle_path = tmp_path / "bundle.json"
    exported = harness(cli_env, "export", session_id, "-o", str(bundle_path))
    assert exported.returncode == 0, exported.stderr
    bundle = json.loads(bundle_path.read_text())
    assert len(bundle["events"]) == len(stored) + len(second)


def test_bad_input_is_one_line_and_non_zero(cli_env, tmp_path):
    for args in (
        ("run", "no-such-harness", "hi", "--workspace", str(tmp_path)),
        ("events", "no-such-session"),
        ("run", "echo", "hi", "--workspace", str(tmp_path / "missing")),
        ("run", "echo", "hi", "--session", "no-such-session"),
        ("describe", "nope"),
        ("events", "x", "--ledger", "bogus://x"),
    ):
        out = harness(cli_env, *args)
        assert out.returncode != 0, args
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("harness: error: "), (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_bad_input_loses_nothing_recorded(cli_env, tmp_path):
    run = harness(cli_env, "run", "echo", "keep me", "--workspace", str(tmp_path), "--json")
    session_id = json.loads(run.stdout.splitlines()[0])["session_id"]
    refused = harness(cli_env, "run", "echo", "", "--session", session_id)
    assert refused.returncode == 2
    assert refused.stderr == "harness: error: invalid-request: the prompt is empty\n"
    events = harness(cli_env, "events", session_id, "--json").stdout.splitlines()
    assert events == run.stdout.splitlines()


def test_cancel_from_another_process(cli_env, tmp_path):
    proc = subprocess.Popen(
        [*harness_cmd(), "run", "echo", "sleep 30", "--workspace", str(tmp_path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
    )
    first = json.loads(proc.stdout.readline())
    session_id = first["session_id"]
    deadline = time.monotonic() + 20
    while True:
        out = harness(cli_env, "cancel", session_id)
        if out.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert out.returncode == 0, out.stderr
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert json.loads(rest.splitlines()[-1])["type"] == "turn.cancelled"


def test_cancel_takes_the_ledger_and_a_prefix_like_close(cli_env, tmp_path):
    # A run on another ledger: its session is found there by a prefix of its id.
    ledger = f"sqlite:{tmp_path}/other.sqlite"
    proc = subprocess.Popen(
        [*harness_cmd(), "run", "echo", "sleep 30", "--ledger", ledger, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
        cwd=tmp_path,
    )
    try:
        session_id = json.loads(proc.stdout.readline())["session_id"]
        deadline = time.monotonic() + 20
        while True:
            out = harness(cli_env, "cancel", session_id[:8], "--ledger", ledger)
            if out.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert out.returncode == 0, out.stderr
        rest, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    assert json.loads(rest.splitlines()[-1])["type"] == "turn.cancelled"


def test_help_and_no_command(cli_env):
    assert harness(cli_env, "--help").returncode == 0
    assert harness(cli_env).returncode == 2


def test_sigint_cancels_the_turn(cli_env, tmp_path):
    proc = subprocess.Popen(
        [*harness_cmd(), "run", "echo", "sleep 30", "--workspace", str(tmp_path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env,
    )
    proc.stdout.readline()
    proc.stdout.readline()  # turn.started
    os.kill(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert json.loads(rest.splitlines()[-1])["payload"]["by"] == "host"
