"""The full record from ACP agents: ``agent_thought_chunk`` -> thinking events (a block ends at
the agent's next other update). ACP reports no model-call boundaries, so no model steps."""

from __future__ import annotations

import pytest
from harness_cli_kit.record_testing import (
    instructions_reach_the_model,
    reasoning_turns,
    vendor_session_id_kept,
)

from .test_acp import AGENTS, acp, setup

SECRET = "sk-test-secret-1234"  # injected by conftest


@pytest.mark.cli
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_thinking_from_agent_thought_chunks(agent, workspace, controller):
    _, env_var, tool_call, _ = AGENTS[agent]
    cli = acp(agent, env_var, workspace, controller)
    cli.config = lambda url, **extra: setup(agent, url, **extra)[1]
    cli.api = "anthropic" if agent == "claude-code" else "openai"
    recorded, _ = reasoning_turns(cli, tool_call, SECRET, model_steps=False)
    assert not any(e.type.startswith("model.") for e in recorded.events)


@pytest.mark.cli
def test_instructions_go_before_the_first_prompt(workspace, controller):
    # ACP has no system-prompt mechanism: the runtime puts them before the first prompt
    _, env_var, _, _ = AGENTS["claude-code"]
    cli = acp("claude-code", env_var, workspace, controller)
    cli.config = lambda url, **extra: setup("claude-code", url, **extra)[1]
    cli.api = "anthropic"
    instructions_reach_the_model(cli, native=False)


@pytest.mark.cli
def test_the_vendor_session_id_is_kept(workspace, controller):
    _, env_var, _, _ = AGENTS["codex"]
    cli = acp("codex", env_var, workspace, controller)
    cli.config = lambda url, **extra: setup("codex", url, **extra)[1]
    cli.api = "openai"
    vendor_session_id_kept(cli)
