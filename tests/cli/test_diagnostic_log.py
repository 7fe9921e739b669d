"""A harness's own exception is for the person debugging it: class, message and traceback in the
session's diagnostic log beside the ledger (``harness logs ID``, ``HARNESS_DEBUG=1``), never in the
ledger, the events or an export, which keep the fixed reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

KEY = "sk-ant-" + "Q7w8E9r0T1y2U3i4O5p6"
BOOM = f"""
async def run(message, session):
    raise RuntimeError("the widget exploded near {KEY}")
"""


def run_boom(env, tmp_path, *extra):
    run = harness(env, "run", "boom", "hi", "--workspace", str(tmp_path), "--json", *extra)
    assert run.returncode == 1, run.stderr
    session_id = json.loads(run.stdout.splitlines()[0])["session_id"]
    return run, session_id


def test_the_exception_is_in_harness_logs_and_nowhere_in_the_record(cli_env, tmp_path):
    install_harness(tmp_path / "site", "boom", BOOM)
    env = {**cli_env, "PYTHONPATH": str(tmp_path / "site")}
    run, session_id = run_boom(env, tmp_path)
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["type"] == "turn.failed"
    assert events[-1]["payload"]["reason"] == "provider-failed"
    log_file = tmp_path / "logs" / f"{session_id}.log"  # beside cli-ledger.sqlite
    assert f"diagnostic log: {log_file} (harness logs {session_id})" in run.stderr
    assert "widget" not in run.stderr  # without HARNESS_DEBUG only where it is

    logs = harness(env, "logs", session_id)
    assert logs.returncode == 0, logs.stderr
    assert "harness boom raised RuntimeError in turn turn_" in logs.stdout
    assert "Traceback (most recent call last):" in logs.stdout
    assert "RuntimeError: the widget exploded near" in logs.stdout
    assert KEY not in logs.stdout  # a key the message quotes is redacted there too
    assert log_file.stat().st_mode & 0o077 == 0

    exported = harness(env, "export", session_id)
    events_out = harness(env, "events", session_id, "--json")
    assert exported.returncode == events_out.returncode == 0
    ledger_bytes = (tmp_path / "cli-ledger.sqlite").read_bytes()
    for wal in tmp_path.glob("cli-ledger.sqlite-*"):
        ledger_bytes += wal.read_bytes()
    for text in (exported.stdout, events_out.stdout, run.stdout, ledger_bytes.decode("latin-1")):
        assert text.count("widget") == 0
        assert "RuntimeError" not in text


def test_harness_debug_prints_the_traceback_inline(cli_env, tmp_path):
    install_harness(tmp_path / "site", "boom", BOOM)
    env = {**cli_env, "PYTHONPATH": str(tmp_path / "site"), "HARNESS_DEBUG": "1"}
    run, _ = run_boom(env, tmp_path)
    assert "harness: debug: harness_core: harness boom raised RuntimeError" in run.stderr
    assert 'raise RuntimeError("the widget exploded near' in run.stderr  # the source line
    assert KEY not in run.stderr


def test_logs_of_a_session_that_logged_nothing_and_of_no_session(cli_env, tmp_path):
    quiet = harness(cli_env, "run", "echo", "hi", "--workspace", str(tmp_path), "--json")
    assert quiet.returncode == 0, quiet.stderr
    session_id = json.loads(quiet.stdout.splitlines()[0])["session_id"]
    logs = harness(cli_env, "logs", session_id)
    assert logs.returncode == 0
    assert logs.stdout == ""
    assert f"nothing was logged for session {session_id}" in logs.stderr
    missing = harness(cli_env, "logs", "no-such-session")
    assert missing.returncode == 2
    assert "session-not-found" in missing.stderr
