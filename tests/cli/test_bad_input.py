"""Every bad input to the CLI: exactly one stderr line ``harness: error: <reason>: <detail>``,
the documented exit code, no traceback, and nothing recorded lost or created."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness

USAGE, UNAVAILABLE, LEDGER = 2, 69, 74

# argv ({tmp} is the test's directory) -> the start of what follows "harness: error: ", exit code
CASES = [
    # harness run: the ones the issue lists
    (["run", "nope", "hi"], "invalid-request: unknown harness 'nope' (installed: ", USAGE),
    (
        ["run", "echo", "hi", "--workspace", "/does/not/exist"],
        "invalid-request: the workspace /does/not/exist does not exist",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--posture", "dangerous"],
        "policy-refused: the dangerous posture needs a closed network",
        USAGE,
    ),
    (["run", "echo", "hi", "--session", "nosuch"], "session-not-found: no such session", USAGE),
    (
        ["run", "echo", "hi", "--posture", "dangerous", "--network", "none"],
        "policy-refused: the dangerous posture is not granted to this session",
        USAGE,
    ),
    # config checked against what the harness declares (harness_core.config_check)
    (
        ["run", "--config", "bogus_key=1", "--config", "mcp_loopback=5", "echo", "x"],
        "invalid-request: unknown config key 'bogus_key' for echo",
        USAGE,
    ),
    (
        ["run", "--config", "mcp_loopback=5", "echo", "x"],
        "invalid-request: config key 'mcp_loopback' for echo: must be object or null, not int",
        USAGE,
    ),
    (
        ["run", "--config", "wire_api=soap", "codex", "x"],
        "invalid-request: config key 'wire_api' for codex: must be one of 'responses', 'chat'",
        USAGE,
    ),
    (
        ["run", "--config", "mode=1", "stdio-jsonl", "x"],
        "invalid-request: config key 'mode' for stdio-jsonl: must be one of",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-cost", "0.0001"],
        "unsupported-feature: echo reports no usage, so max_cost_usd cannot bind",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-cost", "-1"],
        "invalid-request: argument --max-cost: must be a positive number",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-cost", "lots"],
        "invalid-request: argument --max-cost: must be a number",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-turns", "0"],
        "invalid-request: argument --max-turns: must be at least 1",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-tokens", "1.5"],
        "invalid-request: argument --max-tokens: must be a whole number",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--max-wall-clock", "0"],
        "invalid-request: argument --max-wall-clock: must be a positive number of seconds",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--config", "notkv"],
        "invalid-request: --config needs KEY=VALUE, got 'notkv'",
        USAGE,
    ),
    (
        ["run", "claude-code", "hi", "--config", "cli_path=/no/such/claude"],
        "provider-unavailable: cli_path '/no/such/claude' is not an executable file",
        UNAVAILABLE,
    ),
    (
        ["run", "echo", "hi", "--timeout", "-1"],
        "invalid-request: argument --timeout: must be a positive number of seconds",
        USAGE,
    ),
    (["sessions", "--limit", "-5"], "invalid-request: argument --limit: must be at least 1", USAGE),
    # harness run: more options
    (["run", "echo", "hi", "--timeout", "nan"], "invalid-request: argument --timeout: ", USAGE),
    (["run", "echo", "hi", "--timeout", "soon"], "invalid-request: argument --timeout: ", USAGE),
    (
        ["run", "echo", "hi", "--max-events", "0"],
        "invalid-request: argument --max-events: must be at least 1",
        USAGE,
    ),
    (["run", "echo", ""], "invalid-request: the prompt is empty", USAGE),
    (["run", "echo", " \n\t "], "invalid-request: the prompt is empty", USAGE),
    (["run", "echo"], "invalid-request: the prompt is empty", USAGE),  # stdin is empty
    (["run", "echo", "a\x01b"], "invalid-request: the prompt contains control characters", USAGE),
    # JSON nested past the interpreter's depth (was: internal error (RecursionError), exit 70)
    (
        ["run", "echo", "hi", "--config", "command_policy=" + "[" * 20_000 + "]" * 20_000],
        "invalid-request: --config command_policy: nested too deeply",
        USAGE,
    ),
    (
        ["run", "stdio-jsonl", "hi", "--config", "command=" + "[" * 20_000 + "]" * 20_000],
        "invalid-request: --config command: nested too deeply",
        USAGE,
    ),
    (
        ["run", "echo", "--prompt-file", "{tmp}/missing.txt"],
        "invalid-request: cannot read the prompt file {tmp}/missing.txt (No such file or directory)",
        USAGE,
    ),
    (
        ["run", "echo", "--prompt-file", "{tmp}"],
        "invalid-request: cannot read the prompt file {tmp} (Is a directory)",
        USAGE,
    ),
    (
        ["run", "echo", "--prompt-file", "{tmp}/latin1.txt"],
        "invalid-request: the prompt is not UTF-8 text",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--prompt-file", "{tmp}/prompt.txt"],
        "invalid-request: give PROMPT or --prompt-file, not both",
        USAGE,
    ),
    (
        ["import", "{tmp}/missing.json"],
        "invalid-request: cannot read the bundle {tmp}/missing.json (No such file or directory)",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--workspace", "{tmp}/prompt.txt"],
        "invalid-request: the workspace {tmp}/prompt.txt is not a directory",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--sandbox", "nope"],
        "invalid-request: unknown sandbox provider 'nope' (installed: ",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--network", "none"],
        "policy-refused: network policies need a sandbox provider",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--sandbox", "local", "--network", "none"],
        "policy-refused: the local sandbox cannot enforce a network policy",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--sandbox", "local", "--scope", "agent"],
        "invalid-request: this workspace scope needs a agent",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--sandbox", "local", "--scope", "agent", "--agent", "../x"],
        "invalid-request: workspace key agent must not traverse paths",
        USAGE,
    ),
    (["run", "echo", "hi", "--scope", "galaxy"], "invalid-request: argument --scope: ", USAGE),
    (["run", "echo", "hi", "--posture", "wild"], "invalid-request: argument --posture: ", USAGE),
    (
        ["run", "echo", "hi", "--sandbox-config", "=x"],
        "invalid-request: --sandbox-config needs KEY=VALUE",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--ledger", "bogus://x"],
        "invalid-request: unknown ledger URL scheme 'bogus'",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--ledger", "sqlite:{tmp}/prompt.txt"],
        "ledger-failed: ",
        LEDGER,
    ),
    (
        ["run", "stdio-jsonl", "hi"],
        "invalid-request: stdio-jsonl needs a command (config or env)",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--model", ""],
        "invalid-request: model must be 1-256 characters",
        USAGE,
    ),
    (
        ["run", "echo", "hi", "--agent", ""],
        "invalid-request: agent must be 1-128 characters",
        USAGE,
    ),
    (["run", "echo", "--prompt-file", "-"], "invalid-request: the prompt is empty", USAGE),
    (
        ["run"],
        "invalid-request: give a harness NAME (harness list), or --session ID / -c to resume",
        USAGE,
    ),
    (["run", "echo", "hi", "--bogus"], "invalid-request: unrecognized arguments: --bogus", USAGE),
    # the other commands
    (["nosuchcommand"], "invalid-request: argument COMMAND: invalid choice", USAGE),
    (["describe", "nope"], "invalid-request: unknown harness 'nope'", USAGE),
    (["events", "nosuch"], "session-not-found: no such session", USAGE),
    (
        ["events", "x", "--after", "-1"],
        "invalid-request: argument --after: must be at least 0",
        USAGE,
    ),
    (
        ["events", "x", "--limit", "0"],
        "invalid-request: argument --limit: must be at least 1",
        USAGE,
    ),
    (["events", "x", "--ledger", "bogus://x"], "invalid-request: unknown ledger URL scheme", USAGE),
    (
        ["events", "x", "--ledger", "sqlite:{tmp}/prompt.txt"],
        "ledger-failed: the SQLite ledger could not be opened",
        LEDGER,
    ),
    (["export", "nosuch"], "session-not-found: no such session", USAGE),
    (["close", "nosuch"], "session-not-found: no such session", USAGE),
    (
        ["cancel", "nosuch"],
        "turn-not-found: no harness run is running a turn in that session",
        USAGE,
    ),
    (["sessions", "--since", "lately"], "invalid-request: --since needs a duration", USAGE),
    (["sessions", "--status", "maybe"], "invalid-request: argument --status: ", USAGE),
    (["conformance", "nope"], "invalid-request: unknown harness 'nope'", USAGE),
    (["conformance", "echo", "--timeout", "0"], "invalid-request: argument --timeout: ", USAGE),
]


@pytest.fixture
def tmp_dir(tmp_path: Path) -> Path:
    (tmp_path / "prompt.txt").write_text("from a file\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    return tmp_path


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return harness(env, *argv, cwd=cwd)


@pytest.mark.parametrize(("argv", "reason", "code"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_with_its_reason_and_exit_code(
    argv: list[str], reason: str, code: int, cli_env: dict[str, str], tmp_dir: Path
) -> None:
    env = {**cli_env, "HARNESS_WORKSPACES": str(tmp_dir / "workspaces")}
    env.pop("HARNESS_JSONL_COMMAND", None)
    cwd = tmp_dir / "cwd"
    cwd.mkdir()
    out = run([a.replace("{tmp}", str(tmp_dir)) for a in argv], env, cwd)
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("harness: error: " + reason.replace("{tmp}", str(tmp_dir))), lines
    assert out.returncode == code, out.stderr
    assert out.stdout == ""
    # A refused command leaves no ledger and no state behind in the folder it ran in, and
    # records no session in the configured ledger.
    assert list(cwd.iterdir()) == []
    assert run(["sessions", "--json"], env, cwd).stdout == ""


def test_refusals_record_nothing_in_an_existing_session(cli_env, tmp_path):
    """A refused resume loses nothing and appends nothing; a closed session refuses turns."""
    opened = run(
        ["run", "echo", "keep me", "--workspace", str(tmp_path), "--json"], cli_env, tmp_path
    )
    assert opened.returncode == 0, opened.stderr
    session_id = json.loads(opened.stdout.splitlines()[0])["session_id"]
    before = run(["events", session_id, "--json"], cli_env, tmp_path).stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for argv, reason in (
        (["run", "echo", "", "--session", session_id], "invalid-request: the prompt is empty"),
        (
            ["run", "codex", "hi", "--session", session_id],
            "invalid-request: the session belongs to harness 'echo'",
        ),
        (["run", "echo", "hi", "--session", session_id, "--timeout", "0"], "invalid-request"),
        (
            ["run", "echo", "hi", "--session", session_id, "--workspace", str(elsewhere)],
            "invalid-request: the session was recorded for another workspace",
        ),
        (
            ["run", "echo", "hi", "--session", session_id, "--config", "depth=3"],
            "invalid-request: unknown config key 'depth' for echo",
        ),
        (
            ["run", "echo", "hi", "--session", session_id, "--max-turns", "1"],
            "limit-exceeded: max_turns 1 reached",
        ),
    ):
        out = run(argv, cli_env, tmp_path)
        assert out.returncode == USAGE and out.stderr.startswith("harness: error: " + reason)
        assert len(out.stderr.splitlines()) == 1
    assert run(["events", session_id, "--json"], cli_env, tmp_path).stdout == before

    closed = run(["close", session_id], cli_env, tmp_path)
    assert closed.returncode == 0, closed.stderr
    after_close = run(["events", session_id, "--json"], cli_env, tmp_path).stdout.splitlines()
    assert after_close[: len(before.splitlines())] == before.splitlines()
    assert json.loads(after_close[-1])["type"] == "session.closed"
    refused = run(["run", "echo", "again", "--session", session_id], cli_env, tmp_path)
    assert refused.returncode == USAGE
    assert refused.stderr == "harness: error: session-closed: the session is closed\n"
    again = run(["close", session_id, "--json"], cli_env, tmp_path)
    assert json.loads(again.stdout) == {
        "session_id": session_id,
        "status": "closed",
        "outcome": "was already closed",
    }
