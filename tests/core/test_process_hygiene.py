"""Every process a turn starts is gone after it - even one that ``setsid``s and double-forks.

The harness is ``stdio-jsonl`` running :mod:`harness_core.testing.hostile`, which daemonizes a
grandchild (fork, setsid, fork; ignores SIGTERM) on every turn and records every pid it made.
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

from harness_core import Controller, plugins_from, proctree
from harness_core.testing import hostile
from harness_core.testing.processes import tagged
from harness_core.testing.waiting import wait_until

PYTHON = sys.executable
pytestmark = pytest.mark.anyio
HOSTILE = hostile.__file__


def recorded(directory: Path) -> list[int]:
    return sorted(int(p.name) for p in directory.iterdir())


def left(pids: list[int], timeout: float = 5.0, *, host_reaps: bool = False) -> list[int]:
    """The pids still present (alive or an unreaped zombie) after ``timeout``.

    ``host_reaps``: the processes belonged to another controller process (a killed ``harness
    run``); as a subreaper, this test process inherits their zombies and reaps them itself.
    """
    deadline = time.monotonic() + timeout
    while True:
        if host_reaps:
            proctree.reap(pids)
        present = [pid for pid in pids if proctree.read_stat(pid) is not None]
        if not present or time.monotonic() > deadline:
            return present
        time.sleep(0.02)


@pytest.fixture
def pids(tmp_path: Path) -> Path:
    directory = tmp_path / "pids"
    directory.mkdir()
    return directory


def controller(tmp_path: Path) -> Controller:
    return Controller(
        plugins=plugins_from([stdio_plugin]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )


async def open_hostile(c: Controller, tmp_path: Path, *, session: bool = False) -> str:
    command = [PYTHON, HOSTILE, "--pids", str(tmp_path / "pids"), *(["--session"] * session)]
    ref = await c.open_session(
        harness="stdio-jsonl",
        workspace=str(tmp_path),
        config={"command": command, "mode": "session" if session else "per-turn"},
    )
    return ref.session_id


async def wait_for_files(directory: Path, count: int) -> None:
    with anyio.fail_after(10):
        while len(list(directory.iterdir())) < count:
            await anyio.sleep(0.02)


@pytest.fixture(params=["as-found", "no-cgroup", "proc-scan-only"])
def process_layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The machine as it is; as one without a writable cgroup v2 (the owner tag, ancestry and
    group do the work); and one whose kernel has no ``/proc/PID/task/TID/children`` either."""
    if request.param != "as-found":
        monkeypatch.setattr(proctree, "_cgroup_base", (os.getpid(), None))
    if request.param == "proc-scan-only":
        monkeypatch.setattr(proctree, "_children_files", False)
    return str(request.param)


@pytest.mark.parametrize("ending", ["completed", "cancel", "timeout", "crash", "close"])
async def test_daemonized_grandchild_is_gone_after_every_ending(
    tmp_path: Path, pids: Path, ending: str, process_layer: str
) -> None:
    prompt = {"completed": "complete", "crash": "crash"}.get(ending, "hang")
    async with controller(tmp_path) as c:
        session = await open_hostile(c, tmp_path)
        timeout = 1.5 if ending == "timeout" else 30
        async with c.turn(session, prompt, timeout=timeout) as turn:
            async for event in turn:
                if event.type == "message.delta" and ending in ("cancel", "close"):
                    await wait_for_files(pids, 2)
                    if ending == "cancel":
                        await c.cancel_turn(session)
                    else:
                        await c.close_session(session)
        expected = {
            "completed": "turn.completed",
            "cancel": "turn.cancelled",
            "timeout": "turn.failed",
            "crash": "turn.failed",
            "close": "turn.cancelled",
        }[ending]
        assert turn.terminal is not None and turn.terminal.type == expected
        made = recorded(pids)
        assert len(made) == 2  # the program and its daemonized grandchild
        assert left(made) == [], [
            (proctree.read_stat(p), proctree.owner_tag(p), os.getpid()) for p in made
        ]
        assert tagged(proctree.owner() + "/") == []


async def test_session_program_ignoring_cancel_is_replaced(
    tmp_path: Path, pids: Path, process_layer: str
) -> None:
    async with controller(tmp_path) as c:
        session = await open_hostile(c, tmp_path, session=True)
        first = await c.run_turn(session, "complete")
        assert first.status == "completed"
        async with c.turn(session, "hang") as turn:
            async for event in turn:
                if event.type == "message.delta":
                    await c.cancel_turn(session)
        assert turn.result().status == "cancelled"
        made = recorded(pids)
        assert len(made) == 3  # the session program and two grandchildren
        assert left(made) == []  # the program ignored the cancel line: it was killed
        second = await c.run_turn(session, "complete", timeout=20)
        assert second.status == "completed", second.reason
        await c.close_session(session)
    assert left(recorded(pids)) == []


def test_silent_program_dies_with_a_killed_harness_run(tmp_path: Path, pids: Path) -> None:
    env = {**os.environ, "HARNESS_STATE_DIR": str(tmp_path / "st")}
    run = subprocess.Popen(
        [
            sys.executable, "-m", "harness_core.cli", "run", "stdio-jsonl", "silent",
            "--workspace", str(tmp_path), "--ledger", f"sqlite:///{tmp_path}/ledger.sqlite",
            "--config", f"command={PYTHON} {HOSTILE} --pids {pids}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while len(list(pids.iterdir())) < 2:
            assert run.poll() is None, run.stderr.read() if run.stderr else ""
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.05)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    assert left(recorded(pids), timeout=10, host_reaps=True) == []


async def test_function_harness_spawn_is_controlled(tmp_path: Path, pids: Path) -> None:
    """``session.spawn`` runs through the session's process layer: cancel kills the daemon too."""
    from harness_core import harness
    from harness_core.function_harness import ADAPTER_ATTRIBUTE

    started = anyio.Event()

    @harness("spawner")
    async def spawner(message, session):
        proc = await session.spawn(
            [PYTHON, HOSTILE, "--pids", str(pids)], stdin=True, env={"MARK": "x"}
        )
        await proc.send(b'{"type": "turn", "prompt": "hang"}\n')
        async for line in proc.lines():
            started.set()
            yield line.decode()

    adapter = getattr(spawner, ADAPTER_ATTRIBUTE)
    async with Controller(
        plugins=plugins_from([adapter]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    ) as c:
        ref = await c.open_session(harness="spawner", workspace=str(tmp_path))
        async with c.turn(ref, "go") as turn:
            async for event in turn:
                if event.type == "message.delta":
                    await wait_for_files(pids, 2)
                    await c.cancel_turn(ref)
        assert turn.result().status == "cancelled"
        made = recorded(pids)
        assert len(made) == 2
        assert left(made) == []


def test_cancel_never_signals_a_process_that_reused_a_dead_runs_pid(tmp_path: Path) -> None:
    """A killed run's active file stays; its pid may now be another process's: not signalled."""
    import hashlib
    import json

    state = tmp_path / "state"
    session_id = "s-stale"
    active = state / "active" / (hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json")
    active.parent.mkdir(parents=True)
    innocent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        stale = {"pid": innocent.pid, "start": "1", "turn_id": "turn_x"}  # other start time
        active.write_text(json.dumps(stale))
        done = subprocess.run(
            [sys.executable, "-m", "harness_core.cli", "cancel", session_id],
            env={**os.environ, "HARNESS_STATE_DIR": str(state)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0 and "turn-not-found" in done.stderr
        assert innocent.poll() is None  # still alive: never signalled
        assert not active.exists()
    finally:
        innocent.kill()
        innocent.wait()


async def test_a_daemon_that_scrubs_its_environment_is_gone_where_cgroups_work(
    tmp_path: Path, pids: Path
) -> None:
    """Double fork + setsid + an empty environment: no tag, no ancestry, no group left - only
    the spawn's cgroup still holds it."""
    if proctree.cgroup_base() is None:
        pytest.skip("no writable cgroup v2 hierarchy with cgroup.kill here")
    async with controller(tmp_path) as c:
        session = await open_hostile(c, tmp_path)
        async with c.turn(session, "scrub") as turn:
            async for event in turn:
                if event.type == "message.delta":
                    await wait_for_files(pids, 2)
                    # the grandchild has re-executed with an empty environment: no tag left
                    # (found by that, not by the order of the pids: they wrap around)
                    grandchild = await wait_until(
                        lambda: next(
                            (p for p in recorded(pids) if proctree.owner_tag(p) is None), None
                        ),
                        what="the grandchild's re-exec",
                    )
                    await c.cancel_turn(session)
        made = recorded(pids)
        assert grandchild in made and len(made) == 2
        assert left(made) == []
