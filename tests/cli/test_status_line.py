"""A silent turn on a terminal shows it is alive: a spinner with the elapsed time, tool calls and
tokens so far, redrawn on stderr and erased before the answer; piped, nothing of it appears."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness
from harness_hookspecs import Event, ToolStarted, Usage, UsageReported

from harness_core.cli.status_line import StatusLine
from tests.helpers import harness_cmd

SLOW = """
import anyio

async def run(message, session):
    await anyio.sleep(float(message.content))
    return "slept"
"""


def run_in_pty(argv, env, timeout=60):
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other side closed: the run is over
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    return process.wait(10), output.decode("utf-8", "replace")


def test_a_four_second_silent_turn_shows_a_live_line_in_a_pty(cli_env, tmp_path):
    install_harness(tmp_path / "site", "slow", SLOW)
    env = {**cli_env, "PYTHONPATH": str(tmp_path / "site"), "TERM": "xterm"}
    code, output = run_in_pty(
        [*harness_cmd(), "run", "slow", "4", "--workspace", str(tmp_path)], env
    )
    assert code == 0, output
    seconds = re.findall(r"working (\d+)s", output)
    assert len(set(seconds)) >= 3, output  # redrawn as time passes: 0s .. 3s
    assert {"1", "2", "3"} <= set(seconds)
    frames = re.findall(r"\r\x1b\[2K(\S) ", output)
    assert len(set(frames)) >= 5  # the spinner turns
    # erased before the answer, which then starts at the line's start
    assert "\r\x1b[2Kslept\r\n" in output
    assert output.rstrip().split("\r\n")[-1].startswith("\x1b[1;32mcompleted")


def test_nothing_of_it_when_piped(cli_env, tmp_path):
    install_harness(tmp_path / "site", "slow", SLOW)
    env = {**cli_env, "PYTHONPATH": str(tmp_path / "site")}
    run = harness(env, "run", "slow", "1.5", "--workspace", str(tmp_path))
    assert run.returncode == 0
    assert run.stdout == "slept\n"
    assert "working" not in run.stderr and "\x1b" not in run.stderr


def test_the_line_counts_tool_calls_and_tokens(tmp_path):
    with open(tmp_path / "tty.txt", "w") as stream:
        line = StatusLine(stream, colour=False)

        def event(payload):
            return Event(
                session_id="s",
                turn_id="t",
                harness="h",
                sequence=1,
                event_id="e",
                timestamp="2026-01-01T00:00:00Z",
                type=payload.TYPE,
                payload=payload,
            )

        for payload in (
            ToolStarted(call_id="c1", name="Bash"),
            ToolStarted(call_id="c2", name="Read"),
            UsageReported(usage=Usage(input_tokens=1200, output_tokens=34)),
        ):
            line.note(event(payload))
        assert line.text(line.started + 7.4) == "working 7s · 2 tool calls · 1,234 tokens"
