"""A relative ``state_dir`` is resolved when the controller is built: adapters hand paths under
it to CLIs that run in the workspace (Claude Code's ``--mcp-config`` file, for one)."""

from __future__ import annotations

import os

import anyio

from harness_core import Controller, harness, plugins_from


def test_a_relative_state_dir_reaches_the_adapter_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    seen = []

    @harness("where")
    async def where(message, session):
        seen.append(session.context.state_dir)
        return "ok"

    async def main():
        async with Controller(
            plugins=plugins_from([where]), ledger="memory:", state_dir="state"
        ) as controller:
            ref = await controller.open_session(harness="where", workspace=str(tmp_path / "repo"))
            assert (await controller.run_turn(ref, "hi")).ok

    anyio.run(main)
    assert os.path.isabs(seen[0]) and seen[0].startswith(str(tmp_path / "state"))
