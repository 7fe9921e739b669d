"""Every process of an OpenCode turn is gone after it: the turn's ``opencode serve`` and what
its tools started (a ``sleep`` run by the bash tool), after a cancel, a timeout, a completed
turn, and a ``harness run`` killed with SIGKILL mid-turn (the runtime's watchdog)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import anyio
import pytest
from harness_cli_kit.testing import installed_cli

from harness_core import proctree
from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall
from harness_core.testing.processes import with_marker


def script(command: str) -> list[Step]:
    call = ToolCall("bash", {"command": command, "description": "wait"})
    return [
        Step(text="Waiting.", tool_calls=[call]),
        Step(text="Done.", match=Match(tool_result=True)),
    ]


def tagged(prefix: str) -> list[int]:
    """Live processes whose owner tag starts with ``prefix`` (every spawn's children too)."""
    return [
        info.pid
        for info in proctree.snapshot().values()
        if not info.zombie and (proctree.owner_tag(info.pid) or "").startswith(prefix)
    ]


def gone(prefix: str, marker: str, timeout: float = 10.0) -> list[int]:
    """Whoever is still there after ``timeout`` (tagged, or running the marked command)."""
    deadline = time.monotonic() + timeout
    while True:
        proctree.reap(tagged(prefix))
        left = sorted(set(tagged(prefix)) | set(with_marker(marker)))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


async def wait_for_marker(marker: str) -> None:
    with anyio.fail_after(60):
        while not with_marker(marker):
            await anyio.sleep(0.05)


@pytest.mark.cli
@pytest.mark.parametrize("ending", ["cancel", "timeout", "completed"])
def test_the_server_and_its_tools_are_gone_after_the_turn(cli, ending):
    marker = f"oc-hygiene-{uuid.uuid4().hex[:12]}"
    command = f"echo {marker}" if ending == "completed" else f"sleep 300 && echo {marker}"

    async def main(server):
        async with cli.controller(turn_timeout=45 if ending == "timeout" else 90) as c:
            ref = await cli._open(c, cli.config(cli.url(server)))
            context = c._live[ref.session_id].context
            prefix = f"{proctree.owner()}/{context.tag_prefix}"
            seen: list[int] = []
            async with c.turn(ref, "wait please") as turn:
                async for event in turn:
                    if event.type == "tool.started" and ending != "completed":
                        await wait_for_marker(marker)
                        seen = tagged(prefix)  # the server, the shell, the sleep
                        if ending == "cancel":
                            await c.cancel_turn(ref, turn.turn_id)
                    elif event.type == "status" and ending == "completed":
                        seen = tagged(prefix)
                    last = event
            return last, seen, prefix

    with FakeModelServer(script(command)) as server:
        last, seen, prefix = anyio.run(main, server)
    expected = {"cancel": "turn.cancelled", "timeout": "turn.failed", "completed": "turn.completed"}
    assert last.type == expected[ending], last
    assert len(seen) >= (1 if ending == "completed" else 3), seen
    assert gone(prefix, marker) == []


@pytest.mark.cli
def test_a_killed_harness_run_leaves_no_server_and_no_tool(tmp_path):
    marker = f"oc-hygiene-{uuid.uuid4().hex[:12]}"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    opencode = installed_cli("opencode")
    with FakeModelServer(script(f"sleep 300 && echo {marker}")) as server:
        run = subprocess.Popen(
            [
                sys.executable, "-m", "harness_core.cli", "run", "opencode", "wait please",
                "--workspace", str(workspace), "--ledger", f"sqlite:///{tmp_path}/ledger.sqlite",
                "--model", "fake-model", "--config", f"command={opencode}",
                "--config", f"base_url={server.openai_base_url}",
            ],
            env={**os.environ, "HARNESS_STATE_DIR": str(tmp_path / "state")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while not with_marker(marker):
                assert run.poll() is None, run.stderr.read() if run.stderr else ""
                assert time.monotonic() < deadline, "the tool never ran"
                time.sleep(0.1)
            prefix = f"{run.pid}-"
            assert len(tagged(prefix)) >= 3  # the server, the shell, the sleep
        finally:
            run.send_signal(signal.SIGKILL)
            run.wait()
        assert gone(prefix, marker, timeout=15) == []
