"""``harness run`` as people type it: options anywhere, ``--session ID PROMPT`` without the
harness name (the session knows it), ``-c`` for the newest open session, a usage error pointing
at ``harness run --help``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness


def first_session(env, tmp_path) -> str:
    run = harness(env, "run", "echo", "first", "--workspace", str(tmp_path), "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[0])["session_id"]


def events_of(env, session_id):
    out = harness(env, "events", session_id, "--json")
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_options_between_name_and_prompt(cli_env, tmp_path):
    closing = harness(cli_env, "run", "echo", "--close", "closing", "--workspace", str(tmp_path))
    assert closing.returncode == 0, closing.stderr
    assert closing.stdout == "echo: closing\n"
    assert "session closed" in closing.stderr
    session_id = first_session(cli_env, tmp_path)
    second = harness(cli_env, "run", "echo", "--session", session_id, "second turn")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "echo: second turn\n"


def test_session_without_the_harness_name_and_continue(cli_env, tmp_path):
    session_id = first_session(cli_env, tmp_path)
    resumed = harness(cli_env, "run", "--session", session_id, "x")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "echo: x\n"
    by_prefix = harness(cli_env, "run", "--session", session_id[:8], "y")
    assert by_prefix.returncode == 0 and by_prefix.stdout == "echo: y\n"
    continued = harness(cli_env, "run", "-c", "z")
    assert continued.returncode == 0 and continued.stdout == "echo: z\n"
    prompts = [
        e["payload"]["prompt"]
        for e in events_of(cli_env, session_id)
        if e["type"] == "turn.started"
    ]
    assert prompts == ["first", "x", "y", "z"]
    # the newest *open* session: after closing it, -c has nothing to continue
    assert harness(cli_env, "close", session_id).returncode == 0
    nothing = harness(cli_env, "run", "--continue", "again")
    assert nothing.returncode == 2
    assert "session-not-found: no open session to continue" in nothing.stderr


def test_a_usage_error_points_at_the_commands_help(cli_env):
    out = harness(cli_env, "run", "echo", "hi", "--bogus")
    assert out.returncode == 2
    assert out.stderr == (
        "harness: error: invalid-request: unrecognized arguments: --bogus; see harness run --help\n"
    )
    nothing = harness(cli_env, "run")
    assert nothing.returncode == 2
    assert "give a harness NAME (harness list), or --session ID / -c to resume" in nothing.stderr
