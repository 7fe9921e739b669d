"""A failing program's stderr tail is a diagnostic the user can see (status events in the
ledger, ``harness events`` and the run view), bounded, cleaned and redacted - never the failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness_hookspecs import Status, stderr_diagnostics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import harness_cmd

SECRET_SHAPE = "sk-ant-" + "A1b2C3d4E5f6G7h8J9k0"

PROGRAM = f"""
import sys
sys.stdin.readline()
sys.stderr.write("starting\\n" + "noise\\n" * 10)
sys.stderr.write("\\x1b[31mfatal:\\x1b[0m key {SECRET_SHAPE} rejected\\x07\\n")
sys.stderr.write("oops\\n")
sys.exit(1)
"""


def run_args(workspace, command):
    return [
        "run",
        "stdio-jsonl",
        "hi",
        "--workspace",
        str(workspace),
        "--config",
        f"command={command}",
    ]


def test_the_stderr_tail_is_kept_beside_the_failure(cli_env, tmp_path):
    program = tmp_path / "fails.py"
    program.write_text(PROGRAM)
    command = json.dumps([sys.executable, str(program)])
    run = subprocess.run(
        [*harness_cmd(), *run_args(tmp_path, command), "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    assert run.returncode == 1, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    failed = events[-1]
    assert failed["type"] == "turn.failed"
    assert failed["payload"]["hint"] == "the program exited with status 1 without ending the turn"
    notes = [e["payload"]["message"] for e in events if e["type"] == "status"]
    assert notes == [
        "stderr: noise",
        "stderr: noise",
        "stderr: noise",
        "stderr: fatal: key [REDACTED] rejected",
        "stderr: oops",
    ]
    # What `harness events` shows (read back from the ledger) is the same, and nothing raw.
    session_id = events[0]["session_id"]
    shown = subprocess.run(
        [*harness_cmd(), "events", session_id],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    ).stdout
    assert "status                stderr: oops" in shown
    assert SECRET_SHAPE not in shown and "\x1b" not in shown and "\x07" not in shown
    # The readable view shows the diagnostic lines before the failure line.
    readable = subprocess.run(
        [*harness_cmd(), *run_args(tmp_path, command)],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    lines = readable.stderr.splitlines()
    assert lines.index("- stderr: oops") < lines.index(
        "failed: provider-failed: the provider failed"
        " (the program exited with status 1 without ending the turn)"
    )


def test_stderr_diagnostics_are_bounded_and_clean():
    tail = b"\xff\xfebad bytes\r\n" + b"x" * 5000 + b"\n\n   \n" + "caf\u00e9\tok\x00\n".encode()
    notes = stderr_diagnostics(tail, lines=2)
    assert all(isinstance(n, Status) for n in notes)
    assert [len(n.message) for n in notes] == [240, len("stderr: café ok")]
    assert notes[0].message.endswith("...")
    assert notes[1].message == "stderr: café ok"
    assert stderr_diagnostics(b"") == [] and stderr_diagnostics(b"\n \x1b[0m\n") == []
    assert [n.message for n in stderr_diagnostics("a\nb\nc", lines=5)] == [
        "stderr: a",
        "stderr: b",
        "stderr: c",
    ]
