"""ACP fork (``session/fork``) with the real ``claude-code-acp`` against the fake model: a fork
at a turn's end holds the parent's conversation up to it and nothing after (Claude Code's
``resumeSessionAt`` through ``_meta``), a fork at the parent's last event holds every turn (right
after the turn: Claude Code saves its transcript lazily), the parent goes on unaffected, lineage
in both ledgers. ACP has no steer: refused ``unsupported-feature``."""

from __future__ import annotations

import anyio
import pytest
from harness_acp import AcpAdapter
from harness_cli_kit.testing import CliUnderTest, installed_cli
from harness_hookspecs import HarnessError

from harness_core.testing.fake_model import FakeModelServer, Step

KEY = "ANTHROPIC_API_KEY"


@pytest.fixture
def cli(workspace, controller) -> CliUnderTest:
    def config(url: str, **extra):
        return {"command": [installed_cli("claude-code-acp")], "base_url": url, **extra}

    return CliUnderTest(
        "acp:claude-code",
        "claude-sonnet-4-5",
        workspace,
        lambda **kwargs: controller(KEY, **kwargs),
        config,
        api="anthropic",
    )


@pytest.mark.cli
def test_claude_code_acp_forks_at_a_turn(cli):
    cli.assert_forks()


@pytest.mark.cli
def test_acp_has_no_steer(cli):
    async def main(server):
        async with cli.controller(turn_timeout=90) as c:
            ref = await cli.open_session(c, cli.config(cli.url(server)))
            async with c.turn(ref, "the word is GOLF") as running:
                with pytest.raises(HarnessError) as refused:
                    await c.steer(ref, "not through ACP")
                await running.drain()
            return refused.value, c.events(ref.session_id)

    with FakeModelServer([Step(text="noted", times=None)]) as server:
        refused, events = anyio.run(main, server)
    assert refused.reason == "unsupported-feature"
    assert not [e for e in events if e.type == "turn.steered"]
    assert events[-1].type == "turn.completed"


def test_which_acp_agents_fork():
    assert "fork" in AcpAdapter("claude-code").describe().features
    assert "fork" not in AcpAdapter("claude-code").describe().details  # at any turn's end
    for agent in ("codex", "cline", "custom"):  # they do not advertise sessionCapabilities.fork
        assert "fork" not in AcpAdapter(agent).describe().features
