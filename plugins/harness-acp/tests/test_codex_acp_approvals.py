"""codex-acp asks the host only when the model asks to leave its sandbox: in ``read-only`` mode
the fake model scripts an ``exec_command`` with ``sandbox_permissions: "require_escalated"``
(Codex's escalation request), codex-acp sends ``session/request_permission`` and the host's
answer decides whether the command runs."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from harness_cli_kit.approval_testing import (
    APPROVED,
    approval_turn,
    assert_one_terminal,
    permission_events,
)
from harness_cli_kit.testing import CliUnderTest, installed_cli
from harness_hookspecs import PermissionDecision

from harness_core.testing.fake_model import FakeModelServer, ToolCall

ESCALATE = ToolCall(
    "exec_command",
    {
        "cmd": f"touch {APPROVED}",
        "sandbox_permissions": "require_escalated",
        "justification": "Create the file the user asked for?",
    },
)


def config(server: FakeModelServer) -> dict:
    return {
        "command": [installed_cli("codex-acp")],
        "base_url": server.openai_base_url,
        "mode": "read-only",  # on-request approvals: an escalation asks the client
    }


def codex_acp(workspace: str, controller) -> CliUnderTest:
    def make(**kwargs):
        return controller("OPENAI_API_KEY", **kwargs)

    return CliUnderTest("acp:codex", "gpt-5", workspace, make, lambda *a, **k: ("", {}))


@pytest.mark.cli
@pytest.mark.parametrize("answer", ["allow", "deny", "timeout"])
def test_an_escalation_asks_the_host(answer, workspace, controller):
    asked = []

    async def handler(request):
        asked.append(request)
        if answer == "timeout":
            await anyio.sleep(3600)
        return PermissionDecision.allow() if answer == "allow" else PermissionDecision.deny("no")

    result, seconds = approval_turn(
        codex_acp(workspace, controller),
        ESCALATE,
        handler,
        permission_timeout=3,
        config=config,
    )
    events = [(e.type, e.payload) for e in result.events]
    assert (Path(workspace) / APPROVED).exists() == (answer == "allow"), events
    assert asked and f"touch {APPROVED}" in asked[0].summary, asked
    requested, resolved = permission_events(result)
    assert len(requested) == len(resolved) == 1, events
    source = "timeout" if answer == "timeout" else "host"
    decision = "allow" if answer == "allow" else "deny"
    assert (resolved[0].decision, resolved[0].source) == (decision, source)
    assert_one_terminal(result)
    # codex-acp's reject option ("abort") ends its turn: the deny arrives as a cancelled turn
    ended = "turn.completed" if answer == "allow" else "turn.cancelled"
    assert result.events[-1].type == ended, events
    if answer == "timeout":
        assert seconds < 50, seconds
