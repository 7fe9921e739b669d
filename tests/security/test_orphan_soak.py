"""The orphan soak: 100 runs mixing cancel (API and ``harness cancel``), close, timeout, a
crashing program and a ``kill -9``'d controller, under the direct, local and bubblewrap
sandboxes. Every run's program daemonizes a grandchild (fork, setsid, fork; it ignores SIGTERM).
Afterwards no process is left: the PID set after equals the PID set before, restricted to
processes of this soak (their command lines carry the soak's directory) and the runs'
watchdogs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import SandboxSpec
from harness_stdio_jsonl import plugin as stdio_plugin

from harness_core import Controller, plugins_from, proctree
from harness_core.testing import hostile

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
PYTHON = os.path.realpath(sys.executable)
HOSTILE = os.path.realpath(hostile.__file__)
DRIVER = str(Path(__file__).with_name("soak_driver.py"))
RUNS = 100
API_MODES = ("api-cancel", "api-close", "api-timeout", "program-crash")
SANDBOXES = ("direct", "local", "bubblewrap")
#: (sandbox, mode): in-process API runs, a ``kill -9``'d controller under every sandbox, and the
#: ``harness`` CLI (which always runs under the default direct sandbox).
COMBOS = [
    *((s, m) for s in SANDBOXES for m in API_MODES),
    *((s, "controller-kill") for s in SANDBOXES),
    ("direct", "cli-cancel"),
    ("direct", "cli-timeout"),
    ("direct", "cli-kill"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def bwrap_usable() -> str | None:
    try:
        from sandbox_bubblewrap import BwrapUnavailable, probe_bwrap
    except ImportError:
        return "the sandbox-bubblewrap plugin is not installed"
    try:
        probe_bwrap()
    except BwrapUnavailable as error:
        return str(error)
    return None


def soak_processes(marker: str, drivers: set[int]) -> set[tuple[int, int]]:
    """(pid, start) of live or zombie processes of this soak."""
    found = set()
    for info in proctree.snapshot().values():
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        watchdog = b"--watch" in argv and any(
            a.decode(errors="replace").split("-")[0] in {str(d) for d in drivers} for a in argv
        )
        if info.pid != os.getpid() and (watchdog or any(marker.encode() in a for a in argv)):
            found.add((info.pid, info.start))
    return found


class Soak:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.env = {**os.environ, "HARNESS_STATE_DIR": str(tmp / "cli-state")}
        self.ledger = f"sqlite:///{tmp}/ledger.sqlite"
        self.drivers: set[int] = set()
        self.outcomes: dict[str, int] = {}
        self.recorded: list[int] = []

    def run_dir(self, index: int) -> tuple[Path, Path]:
        workspace = self.tmp / "runs" / str(index)
        pids = workspace / "pids"
        pids.mkdir(parents=True)
        return workspace, pids

    def command(self, pids: Path) -> list[str]:
        return [PYTHON, "-I", HOSTILE, "--pids", str(pids)]

    def sandbox(self, name: str) -> SandboxSpec:
        if name == "local":
            return SandboxSpec(provider="local", config={"root": str(self.tmp / "local-root")})
        if name == "bubblewrap":
            return SandboxSpec(provider="bubblewrap", config=self.bwrap_config())
        return SandboxSpec()

    def bwrap_config(self) -> dict[str, object]:
        ro = sorted({os.path.realpath(sys.base_prefix), os.path.dirname(HOSTILE)})
        return {"ro_paths": ro}

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    async def wait_for(self, pids: Path, count: int = 2, timeout: float = 30) -> None:
        with anyio.fail_after(timeout):
            while len(list(pids.iterdir())) < count:
                await anyio.sleep(0.02)

    # -- in-process -------------------------------------------------------------------------

    async def api_run(self, c: Controller, index: int, sandbox: str, mode: str) -> None:
        workspace, pids = self.run_dir(index)
        ref = await c.open_session(
            harness="stdio-jsonl",
            workspace=str(workspace),
            sandbox=self.sandbox(sandbox),
            config={"command": self.command(pids)},
        )
        prompt = "crash" if mode == "program-crash" else "hang"
        timeout = 2.0 if mode == "api-timeout" else 60
        async with c.turn(ref, prompt, timeout=timeout) as turn:
            async for event in turn:
                if event.type == "message.delta" and mode in ("api-cancel", "api-close"):
                    await self.wait_for(pids)
                    if mode == "api-cancel":
                        await c.cancel_turn(ref)
                    else:
                        await c.close_session(ref)
        self.count(f"{sandbox}/{mode}/{turn.result().status}")
        await c.close_session(ref)
        self.record(sandbox, pids)

    def record(self, sandbox: str, pids: Path) -> None:
        made = [int(p.name) for p in pids.iterdir()]
        assert len(made) == 2, made  # the program and its grandchild
        if sandbox != "bubblewrap":  # pids inside bwrap's pid namespace mean nothing out here
            self.recorded += made

    # -- other processes --------------------------------------------------------------------

    async def subprocess_run(self, index: int, sandbox: str, mode: str) -> None:
        workspace, pids = self.run_dir(index)
        if mode == "controller-kill":
            argv = [
                sys.executable, DRIVER, sandbox, str(workspace), self.ledger,
                str(self.tmp / "driver-state"), json.dumps(self.command(pids)),
                json.dumps(self.bwrap_config() if sandbox == "bubblewrap" else (
                    {"root": str(self.tmp / "local-root")} if sandbox == "local" else {})),
            ]  # fmt: skip
        else:
            argv = [
                sys.executable, "-m", "harness_core.cli", "run", "stdio-jsonl", "hang",
                "--workspace", str(workspace), "--ledger", self.ledger, "--json",
                "--config", "command=" + json.dumps(self.command(pids)),
                *(["--timeout", "2"] if mode == "cli-timeout" else []),
            ]  # fmt: skip
        process = await anyio.open_process(
            argv, env=self.env, stderr=subprocess.DEVNULL, start_new_session=True
        )
        self.drivers.add(process.pid)
        try:
            session_id = None
            if mode.startswith("cli-"):
                assert process.stdout is not None
                first = b""
                while not first.endswith(b"\n"):
                    first += await process.stdout.receive(1)
                session_id = json.loads(first)["session_id"]
            await self.wait_for(pids)
            if mode == "cli-cancel":
                cancel = await anyio.run_process(
                    [sys.executable, "-m", "harness_core.cli", "cancel", str(session_id)],
                    env=self.env,
                    check=False,
                )
                assert cancel.returncode == 0, cancel.stderr
            elif mode in ("cli-kill", "controller-kill"):
                process.send_signal(signal.SIGKILL)
            with anyio.fail_after(30):
                if process.stdout is not None:
                    async for _ in process.stdout:
                        pass
                code = await process.wait()
        finally:
            await process.aclose()
        self.count(f"{sandbox}/{mode}/exit {code}")
        self.record(sandbox, pids)


async def test_orphan_soak(tmp_path: Path) -> None:
    unusable = bwrap_usable()
    if unusable is not None:
        pytest.skip(f"bubblewrap unavailable: {unusable}")
    from sandbox_bubblewrap import plugin as bwrap_plugin
    from sandbox_local import plugin as local_plugin

    soak = Soak(tmp_path)
    proctree.ensure_watchdog()  # this process's own watchdog predates the "before" set
    marker = str(tmp_path)
    before = soak_processes(marker, soak.drivers)
    started = time.monotonic()
    api = anyio.CapacityLimiter(8)
    others = anyio.CapacityLimiter(4)

    async with Controller(
        plugins=plugins_from([stdio_plugin, local_plugin, bwrap_plugin]),
        ledger=f"sqlite:///{tmp_path}/api-ledger.sqlite",
        state_dir=tmp_path / "state",
    ) as c:

        async def one(index: int) -> None:
            sandbox, mode = COMBOS[index % len(COMBOS)]
            if mode in API_MODES:
                async with api:
                    await soak.api_run(c, index, sandbox, mode)
            else:
                async with others:
                    await soak.subprocess_run(index, sandbox, mode)

        async with anyio.create_task_group() as tg:
            for index in range(RUNS):
                tg.start_soon(one, index)

    # This test process is a subreaper too: zombies of the killed controllers' processes are
    # re-parented to it, and reaping them is its job as their host.
    deadline = time.monotonic() + 15
    while True:
        proctree.reap(pid for pid, _ in soak_processes(marker, soak.drivers))
        after = soak_processes(marker, soak.drivers)
        if after == before or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    print(f"orphan soak: {RUNS} runs in {elapsed:.1f}s; {len(soak.recorded)} processes made")
    print(json.dumps(dict(sorted(soak.outcomes.items())), indent=1))
    assert sum(soak.outcomes.values()) == RUNS
    mine = {pid for pid, _ in after}  # a recorded pid may have been reused by another process
    assert [pid for pid in soak.recorded if pid in mine] == []
    assert after - before == set(), [describe(pid) for pid, _ in after - before]


def describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        argv = "?"
    return f"{proctree.read_stat(pid)} {argv[:200]}"
