"""A ``harness run`` of a real CLI killed with SIGKILL mid-turn leaves nothing behind: not the CLI
(or its server), not the shell its tool started, not the program that shell runs. Nobody is left
to stop them but the runtime's watchdog.

Each CLI runs against the fake model, which scripts the CLI's own shell tool (the call its
conformance profile makes, with a 300 s wait in place of the profile's command)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall
from harness_core.testing.processes import left_behind, tagged, with_marker

#: harness name -> the module holding its ``OFFLINE`` conformance profile (``module:agent``:
#: the ACP plugin's profile of that agent; its agent process lives for the whole session)
CLIS = {
    "claude-code": "harness_claude_code.plugin",
    "codex": "harness_codex.plugin",
    "opencode": "harness_opencode.plugin",
    "pi": "harness_pi.plugin",
    "acp:claude-code": "harness_acp.plugin:claude-code",
}


def profile(name: str) -> Any:
    module_name, _, agent = CLIS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        pytest.skip(f"the {name} plugin is not installed")
    return module.OFFLINE[agent] if agent else module.OFFLINE


def shell_call(offline: Any, command: str) -> ToolCall:
    """The profile's approval call with ``command`` in place of its ``touch``."""
    tool, arguments = offline.approval_call
    text = json.dumps(dict(arguments)).replace("touch approved.txt", command)
    return ToolCall(tool, json.loads(text))


@pytest.mark.cli
@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_killed_harness_run_leaves_no_cli_and_no_tool(name: str, tmp_path: Path) -> None:
    offline = profile(name)
    try:
        config = offline.config()
    except Exception as error:  # the CLI is not installed: HarnessError(unsupported-feature)
        pytest.skip(f"{name}: {error}")
    marker = f"killed-run-{uuid.uuid4().hex[:12]}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # not ``sleep``: Claude Code refuses a long foreground sleep
    # two commands: the shell stays (one alone, it may exec the program)
    wait = f"python3 -c 'import time; time.sleep(300)' {marker}; echo done"
    script = [
        Step(text="Waiting.", tool_calls=[shell_call(offline, wait)]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        config["base_url"] = (
            server.base_url if offline.api == "anthropic" else server.openai_base_url
        )
        pairs = [
            arg
            for key, value in config.items()
            for arg in ("--config", f"{key}={json.dumps(value)}")
        ]
        run = subprocess.Popen(
            [
                sys.executable, "-m", "harness_core.cli", "run", name, "wait please",
                "--workspace", str(workspace), "--ledger", f"sqlite:///{tmp_path}/ledger.sqlite",
                "--model", offline.model, "--posture", "auto", *pairs,
            ],
            env={**os.environ, "HARNESS_STATE_DIR": str(tmp_path / "state")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while not with_marker(marker):
                if run.poll() is not None:
                    pytest.fail(
                        f"harness run ended first: {run.stderr.read() if run.stderr else ''}"
                    )
                assert time.monotonic() < deadline, "the tool never ran"
                time.sleep(0.1)
            prefix = f"{run.pid}-"
            # the CLI, the shell, the wait (the marker shows in a command line a moment before
            # the environment of a process still starting can be read)
            while len(tagged(prefix)) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(tagged(prefix)) >= 3, tagged(prefix)
        finally:
            run.send_signal(signal.SIGKILL)
            run.wait()
        assert left_behind(prefix, marker, timeout=15) == []
