"""``harness run``'s views and options, end to end through the real CLI: the readable view
(answer once, as it streams; compact tool lines; summary), ``--events``, ``--json``, the prompt
from stdin or a file, sandbox/agent options reaching the sandbox and credential grants, close."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

# A stdio-jsonl program: streams an answer with a tool call and usage; "env" reports what
# the session was given (credential present or not, where it runs).
PROGRAM = """
import json, os, sys
turn = json.loads(sys.stdin.readline())
def out(**line):
    print(json.dumps(line), flush=True)
if turn["prompt"] == "env":
    token = "set" if os.environ.get("REVIEW_TOKEN") else "unset"
    with open("marker.txt", "w") as handle:
        handle.write(turn["session_id"])
    out(type="turn.completed", text=f"token={token} cwd={os.getcwd()}")
    sys.exit(0)
out(type="message.delta", text="Hello")
out(type="tool.started", call_id="c1", name="Bash", summary="ls -la")
out(type="tool.completed", call_id="c1", name="Bash", ok=True, summary="3 files")
out(type="message.delta", text=" world")
out(type="usage", input_tokens=1200, output_tokens=34, cost_usd=0.0012)
out(type="message.completed", text="Hello world")
out(type="turn.completed", text="Hello world")
"""


@pytest.fixture
def env(cli_env, tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    return {
        **cli_env,
        "HARNESS_JSONL_COMMAND": json.dumps([sys.executable, str(program)]),
        "HARNESS_WORKSPACES": str(tmp_path / "workspaces"),
    }


def test_readable_view_streams_the_answer_once_with_compact_lines(env, tmp_path):
    out = harness(env, "run", "stdio-jsonl", "hi", "--workspace", str(tmp_path))
    assert out.returncode == 0, out.stderr
    # The answer on stdout, once, whole (a tool line broke it: it resumes on a new line).
    assert out.stdout == "Hello\n world\n"
    chrome = out.stderr.splitlines()
    assert re.fullmatch(
        r"session [0-9a-f-]{36}  \(stdio-jsonl, posture auto, sandbox direct\)", chrome[0]
    )
    assert chrome[1:3] == ["> Bash: ls -la", "< Bash ok: 3 files"]
    assert re.fullmatch(r"completed \| 1,200 in / 34 out tokens, \$0\.0012 \| \d+\.\ds", chrome[-1])
    assert "\x1b" not in out.stdout + out.stderr  # piped: plain text


def test_colour_on_a_terminal(env, tmp_path):
    out = harness(
        {**env, "FORCE_COLOR": "1"}, "run", "stdio-jsonl", "hi", "--workspace", str(tmp_path)
    )
    assert out.returncode == 0, out.stderr
    assert "\x1b[" in out.stderr and "Bash" in out.stderr
    assert out.stdout.replace("\n", "") == "Hello world"  # the answer itself stays unstyled


def test_events_and_json_views(env, tmp_path):
    per_event = harness(env, "run", "stdio-jsonl", "hi", "--workspace", str(tmp_path), "--events")
    assert per_event.returncode == 0, per_event.stderr
    assert per_event.stderr.startswith("session ")
    kinds = [line.split()[1] for line in per_event.stdout.splitlines()]
    assert kinds[0] == "session.opened" and kinds[-1] == "turn.completed"
    assert "tool.started" in kinds and "usage" in kinds
    machine = harness(env, "run", "stdio-jsonl", "hi", "--workspace", str(tmp_path), "--json")
    events = [json.loads(line) for line in machine.stdout.splitlines()]
    assert [e["type"] for e in events] == kinds
    assert machine.stderr == ""


def test_prompt_from_stdin_and_from_a_file(cli_env, tmp_path):
    dash = harness(cli_env, "run", "echo", "-", "--workspace", str(tmp_path), stdin="from stdin\n")
    assert dash.returncode == 0, dash.stderr
    assert dash.stdout == "echo: from stdin\n"
    piped = harness(cli_env, "run", "echo", "--workspace", str(tmp_path), stdin="piped in")
    assert piped.stdout == "echo: piped in\n"
    # Bigger than one argv string may be (128 KiB on Linux).
    big = "word " * 40_000 + "end"
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(big)
    long = harness(
        cli_env,
        "run",
        "echo",
        "--prompt-file",
        str(prompt_file),
        "--workspace",
        str(tmp_path),
        "--json",
    )
    assert long.returncode == 0, long.stderr
    events = [json.loads(line) for line in long.stdout.splitlines()]
    assert events[1]["payload"]["prompt"] == big
    assert events[-1]["payload"]["text"] == "echo: " + big


def test_agent_options_reach_the_sandbox_and_the_credential_grants(env, tmp_path):
    grants = tmp_path / "grants.toml"
    grants.write_text(
        'vendor_defaults = false\n[[grants]]\nagent = "reviewer"\npurpose = "integration"\n'
        'env = "REVIEW_TOKEN"\nfrom_env = "HOST_REVIEW_TOKEN"\n'
    )
    env = {**env, "HARNESS_CREDENTIAL_GRANTS": str(grants), "HOST_REVIEW_TOKEN": "tok-1234567890"}
    args = ("run", "stdio-jsonl", "env", "--workspace", str(tmp_path), "--json")
    scoped = ("--sandbox", "local", "--scope", "agent", "--agent", "reviewer")
    granted = harness(env, *args, *scoped)
    assert granted.returncode == 0, granted.stderr
    answer = json.loads(granted.stdout.splitlines()[-1])["payload"]["text"]
    durable = tmp_path / "workspaces" / "agent" / "reviewer"
    assert answer == f"token=set cwd={os.path.realpath(durable)}"
    assert (durable / "marker.txt").exists()
    other = harness(env, *args, "--agent", "someone-else")
    assert json.loads(other.stdout.splitlines()[-1])["payload"]["text"].startswith("token=unset")


def test_close_version_and_the_session_id_first(cli_env, tmp_path):
    run = harness(cli_env, "run", "echo", "hi", "--workspace", str(tmp_path))
    session_id = run.stderr.split()[1]
    listed = json.loads(harness(cli_env, "sessions", "--json").stdout.splitlines()[0])
    assert listed["ref"]["session_id"] == session_id and listed["status"] == "open"
    closed = harness(cli_env, "close", session_id)
    assert closed.returncode == 0 and closed.stdout == f"session {session_id} closed\n"
    listed = json.loads(harness(cli_env, "sessions", "--json").stdout.splitlines()[0])
    assert listed["status"] == "closed"
    version = harness(cli_env, "--version")
    assert version.returncode == 0
    assert re.fullmatch(r"harness \d+\.\d+\.\d+\S* \(\S+\)\n", version.stdout)


def test_plain_text_when_rich_is_missing(monkeypatch):
    import io

    from harness_core.cli.output import Out

    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails as if not installed
    stream = io.StringIO()
    out = Out(stream, colour=True)
    assert not out.rich
    out.line("done", "bold green")
    out.table(["A", "LONGER"], [["xyz", "1"]], right=("LONGER",))
    assert stream.getvalue() == "done\nA    LONGER\nxyz       1\n"
