"""A one-function harness under bubblewrap: ``session.spawn`` runs inside the sandbox, and
cancel kills everything it started (a setsid'd double-forked grandchild included)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import anyio
from harness_hookspecs import SandboxSpec, hookimpl
from sandbox_bubblewrap import BubblewrapSandboxProvider

from harness_core import Controller, harness, plugins_from
from harness_core.function_harness import ADAPTER_ATTRIBUTE
from harness_core.testing import hostile
from harness_core.testing.processes import with_marker

PYTHON = os.path.realpath(sys.executable)
HOSTILE = os.path.realpath(hostile.__file__)
EXPOSE = sorted({os.path.realpath(sys.base_prefix), os.path.dirname(HOSTILE)})


class _Provider:
    def __init__(self, runtime_dir: Path) -> None:
        self.provider = BubblewrapSandboxProvider(runtime_dir=runtime_dir)

    @hookimpl
    def register_sandbox_providers(self, register) -> None:
        register(self.provider)


def test_function_harness_spawn_runs_sandboxed_and_cancel_kills_everything(bwrap, tmp_path):
    workspace = tmp_path / "ws"
    pids = workspace / "pids"  # the marker: on every command line of the run
    pids.mkdir(parents=True)
    seen: dict[str, object] = {}

    @harness("bw-spawner")
    async def spawner(message, session):
        probe = await session.spawn(
            [PYTHON, "-I", "-c", "import json, os, socket; print(json.dumps("
             "[os.getuid(), socket.gethostname(), os.environ.get('HOME')]))"]
        )  # fmt: skip
        async for line in probe.lines():
            seen["probe"] = json.loads(line)
        await probe.wait()
        proc = await session.spawn([PYTHON, "-I", HOSTILE, "--pids", str(pids)], stdin=True)
        await proc.send(b'{"type": "turn", "prompt": "hang"}\n')
        async for line in proc.lines():
            yield line.decode()

    async def main():
        async with Controller(
            plugins=plugins_from([getattr(spawner, ADAPTER_ATTRIBUTE), _Provider(tmp_path / "rt")]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        ) as c:
            ref = await c.open_session(
                harness="bw-spawner",
                workspace=str(workspace),
                sandbox=SandboxSpec(provider="bubblewrap", config={"ro_paths": EXPOSE}),
            )
            async with c.turn(ref, "go") as turn:
                async for event in turn:
                    if event.type == "message.delta":
                        with anyio.fail_after(20):
                            while len(list(pids.iterdir())) < 2:
                                await anyio.sleep(0.02)
                        seen["during"] = len(with_marker(str(pids)))
                        await c.cancel_turn(ref)
            seen["status"] = turn.result().status
            deadline = time.monotonic() + 5
            while with_marker(str(pids)) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            seen["after_cancel"] = with_marker(str(pids))

    anyio.run(main)
    uid = 65534 if os.geteuid() == 0 else os.getuid()
    assert seen["probe"] == [uid, "sandbox", "/run/harness-home"]
    assert seen["status"] == "cancelled"
    assert seen["during"] >= 3  # bwrap, the program, its grandchild (host pids)
    assert seen["after_cancel"] == []
