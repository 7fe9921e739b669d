"""Claude Code (the real CLI, against the fake model) asks for a tool call on a Temporal
worker; the host answers through the workflow's ``answer_permission`` update: allowed -> the
file is written, denied -> no file; the turn ends with one terminal either way."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from harness_cli_kit.approval_testing import APPROVED, approval_script
from harness_hookspecs import PermissionDecision

from harness_core.testing.clis import NPM_BIN
from harness_core.testing.fake_model import FakeModelServer, ToolCall

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cancel import with_worker

TOUCH = ToolCall("Bash", {"command": f"touch {APPROVED}", "description": "touch"})


@pytest.mark.cli
@pytest.mark.parametrize("answer", ["allow", "deny"])
def test_claude_code_asks_and_the_host_answers_through_the_update(
    answer, temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, monkeypatch
):
    claude = NPM_BIN / "claude"
    if not claude.exists():
        pytest.skip(f"claude is not installed in {NPM_BIN} (run .ci/install-clis.sh)")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-temporal-approval-0000")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    decision = PermissionDecision.allow() if answer == "allow" else PermissionDecision.deny("no")

    async def body(controller, client, queue):
        ref = await controller.open_session(
            harness="claude-code", workspace=workspace, model="claude-test", posture="strict",
            config={"cli_path": str(claude), "base_url": server.base_url},
        )  # fmt: skip
        landed = None
        async with controller.turn(ref, f"create {APPROVED}") as turn:
            async for event in turn:
                if event.type == "permission.requested":
                    asked = time.monotonic()
                    await controller.approve(ref, event.payload.request_id, decision)
                if event.type == "permission.resolved":
                    landed = time.monotonic() - asked
            summary = await turn.result()
        await controller.close_session(ref)
        return summary, turn.events, landed

    with FakeModelServer(approval_script(TOUCH)) as server:
        summary, events, landed = anyio.run(
            with_worker, temporal_address, postgresql_ledger_url, tmp_path, body
        )
    print(f"claude code approval ({answer}): decision in the ledger {landed:.3f} s after approve")
    assert summary.status == "completed", summary
    resolved = next(e.payload for e in events if e.type == "permission.resolved")
    assert (resolved.decision, resolved.source) == (answer, "host")
    assert landed < 0.5, landed
    assert (Path(workspace) / APPROVED).exists() == (answer == "allow")
    terminals = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
    assert terminals == ["turn.completed"]
