"""OpenTelemetry from the ``harness`` command line: the standard ``OTEL_*`` environment (or
``--otel``) exports a run as it happens, and ``harness trace ID`` sends a recorded session
(here one the real Claude Code CLI recorded against the fake model) as a trace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")

HARNESS = [sys.executable, "-m", "harness_core.cli"]


def spans_of(text: str) -> list[dict]:
    """The console exporter's spans: pretty-printed JSON objects, one after another."""
    decoder, spans = json.JSONDecoder(), []
    for match in re.finditer(r"(?m)^\{$", text):
        value, _ = decoder.raw_decode(text, match.start())
        if isinstance(value, dict) and "context" in value:
            spans.append(value)
    return spans


@pytest.fixture
def env(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "HARNESS_"))}
    clean.update(
        HARNESS_LEDGER=f"sqlite:///{tmp_path}/ledger.sqlite",
        HARNESS_STATE_DIR=str(tmp_path / "state"),
        HARNESS_CACHE_DIR=str(tmp_path / "cache"),
    )
    return clean


def harness(env, *args, timeout=120):
    return subprocess.run(
        [*HARNESS, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_otel_traces_exporter_console_prints_the_runs_spans(env, tmp_path):
    run = harness(
        {**env, "OTEL_TRACES_EXPORTER": "console"},
        "run",
        "echo",
        "hi",
        "--workspace",
        str(tmp_path),
    )
    assert run.returncode == 0, run.stderr
    spans = {span["name"]: span for span in spans_of(run.stdout)}
    assert {"invoke_agent echo", "harness.session echo"} <= set(spans)
    turn, session = spans["invoke_agent echo"], spans["harness.session echo"]
    assert turn["parent_id"] == session["context"]["span_id"]
    assert turn["attributes"]["harness.turn.status"] == "completed"
    assert turn["resource"]["attributes"]["service.name"] == "harness"
    assert "hi" not in json.dumps(turn["attributes"])  # prompts and answers are not exported
    # without the environment, nothing is exported
    quiet = harness(env, "run", "echo", "hi", "--workspace", str(tmp_path))
    assert quiet.returncode == 0 and spans_of(quiet.stdout) == []


def test_otel_flag_with_no_exporter_installed_is_one_clear_line(env, tmp_path):
    if any(ep.name == "otlp" for ep in entry_points(group="opentelemetry_traces_exporter")):
        pytest.skip("the OTLP exporter is installed here")
    run = harness(env, "run", "echo", "hi", "--otel", "--workspace", str(tmp_path))
    assert run.returncode != 0
    assert "invalid-request" in run.stderr and "'otlp', which is not installed" in run.stderr
    assert "Traceback" not in run.stderr


def test_trace_sends_a_recorded_claude_code_session(env, tmp_path):
    from harness_core.testing.clis import cli_dirs
    from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

    folders = [d for d in cli_dirs() if (Path(d) / "claude").exists()]
    if not folders:
        pytest.skip("the claude CLI is not installed (run .ci/install-clis.sh)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    bash = ToolCall("Bash", {"command": "echo hello > out.txt", "description": "write"})
    script = [
        Step(text="Creating it.", tool_calls=[bash]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]
    recorded = {
        **env,
        "ANTHROPIC_API_KEY": "sk-test-0123456789",
        "HARNESS_CLI_PATH": str(folders[0]),
    }
    with FakeModelServer(script) as server:
        run = harness(
            recorded,
            "run",
            "claude-code",
            "make out.txt",
            "--workspace",
            str(workspace),
            "--config",
            f"base_url={server.base_url}",
            "--json",
            timeout=240,
        )
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    session_id = events[0]["session_id"]
    usage = next(e["payload"]["usage"] for e in events if e["type"] == "usage")

    sent = harness({**env, "OTEL_TRACES_EXPORTER": "console"}, "trace", session_id[:8])
    assert sent.returncode == 0, sent.stderr
    assert "1 turns, 1 tool calls" in sent.stderr
    spans = {span["name"]: span for span in spans_of(sent.stdout)}
    session = spans["harness.session claude-code"]
    turn = spans["invoke_agent claude-code"]
    tool = spans["execute_tool Bash"]
    assert session["parent_id"] is None
    assert turn["parent_id"] == session["context"]["span_id"]
    assert tool["parent_id"] == turn["context"]["span_id"]
    assert turn["attributes"]["gen_ai.usage.input_tokens"] == usage["input_tokens"]
    assert turn["attributes"]["gen_ai.usage.output_tokens"] == usage["output_tokens"]
    assert turn["attributes"]["harness.cost_usd"] == pytest.approx(usage["cost_usd"])
    assert turn["attributes"]["harness.turn.status"] == "completed"
    assert tool["attributes"]["gen_ai.tool.name"] == "Bash"
    # span times are the recorded events' times
    started = next(e for e in events if e["type"] == "turn.started")["timestamp"]
    assert turn["start_time"][:23] == started[:23]
    assert "sk-test" not in sent.stdout and "make out.txt" not in sent.stdout


def test_trace_of_an_unknown_session_is_session_not_found(env):
    sent = harness({**env, "OTEL_TRACES_EXPORTER": "console"}, "trace", "no-such-session")
    assert sent.returncode != 0
    assert "session-not-found" in sent.stderr and "Traceback" not in sent.stderr
