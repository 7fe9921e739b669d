"""Delegation's cancel and crash cascade (issue 32): the child is ``stdio-jsonl`` running
:mod:`harness_core.testing.hostile` (it daemonizes a grandchild that ignores SIGTERM and records
every pid it made), as the process-hygiene tests use it.

- cancelling the parent's turn mid-child ends both turns cancelled, no process left;
- a kill -9 of the controller mid-child leaves no process; the next run (a resume of the parent)
  ends both dangling turns ``interrupted`` and closes the child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_stdio_jsonl import plugin as stdio_plugin

from harness_core import Controller, harness, plugins_from
from harness_core.delegation import ChildProfile, Delegation, children_of
from harness_core.testing import hostile
from tests.core.test_process_hygiene import left, recorded

PYTHON = sys.executable
HOSTILE = hostile.__file__

BOSS = """
import sys
import anyio
from harness_core import Controller, harness, plugins_from
from harness_core.delegation import ChildProfile, Delegation
from harness_stdio_jsonl import plugin as stdio_plugin


@harness("boss", features=("resume", "cancel"))
async def boss(message, session):
    answer = await session.run_agent("stdio-jsonl", message.content)
    return answer.text or answer.status


def controller(root, hostile):
    command = [sys.executable, hostile, "--pids", f"{root}/pids"]
    return Controller(
        plugins=plugins_from([boss, stdio_plugin]),
        ledger=f"sqlite:///{root}/ledger.sqlite",
        state_dir=f"{root}/state",
        delegation=Delegation({"stdio-jsonl": ChildProfile(config={"command": command})}),
    )


async def main(root, hostile):
    async with controller(root, hostile) as c:
        ref = await c.open_session(harness="boss", workspace=root)
        print(ref.session_id, flush=True)
        await c.run_turn(ref, "hang")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
"""


@harness("boss", features=("resume", "cancel"))
async def boss(message, session):
    answer = await session.run_agent("stdio-jsonl", message.content)
    return answer.text or answer.status


def controller(root: Path) -> Controller:
    command = [PYTHON, HOSTILE, "--pids", str(root / "pids")]
    return Controller(
        plugins=plugins_from([boss, stdio_plugin]),
        ledger=f"sqlite:///{root}/ledger.sqlite",
        state_dir=root / "state",
        delegation=Delegation({"stdio-jsonl": ChildProfile(config={"command": command})}),
    )


def wait_for_pids(directory: Path, count: int, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + 30
    while len(list(directory.iterdir())) < count:
        if process is not None:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the child's program never started"
        time.sleep(0.05)


def terminals(events) -> list[tuple[str, str | None]]:
    return [
        (e.type, getattr(e.payload, "reason", None) or getattr(e.payload, "by", None))
        for e in events
        if e.type in ("turn.completed", "turn.failed", "turn.cancelled")
    ]


def test_cancelling_the_parent_mid_child_cancels_both_and_leaves_no_process(tmp_path):
    (tmp_path / "pids").mkdir()

    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            results = []

            async def run():
                results.append(await c.run_turn(ref, "hang"))

            async with anyio.create_task_group() as group:
                group.start_soon(run)
                await anyio.to_thread.run_sync(wait_for_pids, tmp_path / "pids", 2)
                await c.cancel_turn(ref)
            [child] = children_of(c.ledger, ref.session_id)
            return results[0], c.events(child.session_id)

    result, child_events = anyio.run(main)
    assert result.status == "cancelled", result
    assert terminals(child_events) == [("turn.cancelled", "host")]
    assert left(recorded(tmp_path / "pids")) == []


@pytest.mark.slow
def test_kill_9_mid_child_leaves_no_process_and_the_next_run_closes_both(tmp_path):
    (tmp_path / "pids").mkdir()
    script = tmp_path / "boss.py"
    script.write_text(BOSS)
    run = subprocess.Popen(
        [PYTHON, str(script), str(tmp_path), HOSTILE],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        parent_id = run.stdout.readline().strip()
        wait_for_pids(tmp_path / "pids", 2, run)
    finally:
        run.send_signal(signal.SIGKILL)  # the controller only: its children are its to take
        run.wait()
    assert parent_id
    assert left(recorded(tmp_path / "pids"), timeout=10, host_reaps=True) == []

    async def next_run():
        async with controller(tmp_path) as c:
            [child] = children_of(c.ledger, parent_id)
            assert c.ledger.get_session(child.session_id).status == "open"
            await c.resume_session(parent_id)
            child_record = c.ledger.get_session(child.session_id)
            return c.events(parent_id), c.events(child.session_id), child_record

    parent_events, child_events, child_record = anyio.run(next_run)
    assert terminals(parent_events) == [("turn.failed", "interrupted")]
    assert terminals(child_events) == [("turn.failed", "interrupted")]
    assert child_record.status == "closed"
    assert child_events[-1].type == "session.closed"
