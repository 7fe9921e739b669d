"""``harness run --approve`` on a real terminal (a pty) and the session budget flags."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_run import harness
from conftest import harness_cmd


def _on_a_terminal(env: dict[str, str], args: list[str], answer: bytes) -> tuple[str, int]:
    """Run ``harness *args`` with a pty as its controlling terminal; answer the first question
    with ``answer``; return everything it wrote and its exit code."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal and stdio
        try:
            os.execvpe(harness_cmd()[0], [*harness_cmd(), *args], env)
        finally:
            os._exit(127)
    seen = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal: it exited
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(fd, answer + b"\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return seen.decode(errors="replace"), os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize(("answer", "said"), [(b"y", "allowed"), (b"n", "denied")])
def test_approve_asks_on_the_terminal_with_the_command_shown(cli_env, tmp_path, answer, said):
    out, code = _on_a_terminal(
        cli_env,
        ["run", "echo", "run make test", "--approve", "--workspace", str(tmp_path)],
        answer,
    )
    assert "harness: allow shell: make test? [y/N]" in out, out
    assert f"echo: {said}: make test" in out, out
    assert code == 0, out


def test_approve_without_a_terminal_is_one_clear_line(cli_env, tmp_path):
    out = subprocess.run(
        [*harness_cmd(), "run", "echo", "run ls", "--approve", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        env=cli_env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal
        timeout=60,
    )
    assert out.stderr.splitlines() == [
        "harness: error: invalid-request: --approve needs a terminal to ask on"
    ]
    assert out.returncode == 2


def test_strict_without_approve_denies_and_max_turns_refuses_the_next_run(cli_env, tmp_path):
    first = harness(
        cli_env,
        "run",
        "echo",
        "run ls",
        "--posture",
        "strict",
        "--json",
        "--workspace",
        str(tmp_path),
    )
    assert first.returncode == 0, first.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    resolved = next(e for e in events if e["type"] == "permission.resolved")["payload"]
    assert (resolved["decision"], resolved["source"]) == ("deny", "policy")
    session_id = events[0]["session_id"]
    again = harness(cli_env, "run", "echo", "hi", "--session", session_id, "--max-turns", "1")
    # refused in one line before the session resumes (nothing recorded)
    assert again.stderr.splitlines()[-1] == "harness: error: limit-exceeded: max_turns 1 reached"
    assert "Traceback" not in again.stderr
    assert again.returncode == 2
    allowed = harness(cli_env, "run", "echo", "hi", "--session", session_id, "--max-turns", "2")
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.cli
@pytest.mark.parametrize(("answer", "created"), [(b"y", True), (b"n", False)])
def test_approve_shows_claude_codes_tool_and_input_on_a_terminal(
    cli_env, tmp_path, answer, created
):
    """The real Claude Code CLI against the fake model asks for a Bash call: the terminal shows
    the tool and its input, and the y/n answer decides whether the file is written."""
    from harness_cli_kit.testing import installed_cli

    from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

    claude = installed_cli("claude")
    touch = ToolCall("Bash", {"command": "touch approved.txt", "description": "make the file"})
    script = [
        Step(text="Asking to run it.", tool_calls=[touch]),
        Step(text="Finished.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        env = {**cli_env, "ANTHROPIC_API_KEY": "sk-ant-pty-test-1234"}
        args = ["run", "claude-code", "create approved.txt", "--approve"]
        args += ["--workspace", str(tmp_path), "--model", "claude-test"]
        args += ["--config", f"cli_path={claude}", "--config", f"base_url={server.base_url}"]
        out, code = _on_a_terminal(env, args, answer)
    shown = 'harness: Bash input: {"command": "touch approved.txt", "description": "make the file"}'
    assert shown in out, out
    assert "harness: allow Bash: touch approved.txt? [y/N]" in out, out
    assert (tmp_path / "approved.txt").exists() == created, out
    decided = "allow" if created else "deny"
    assert f"{decided} by host" in out, out
    assert code == 0, out
