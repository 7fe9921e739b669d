"""Structured turn output over ACP by prompt-and-validate (``session/prompt`` has no field for
it): the shared scenarios against Zed's Claude Code and Codex wrappers and the fake model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from harness_cli_kit.structured_testing import PromptedStructuredScenarios
from harness_cli_kit.testing import CliUnderTest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_acp import AGENTS, model_for, setup


@pytest.fixture(params=["claude-code", "codex"])
def cli(request, workspace, controller) -> CliUnderTest:
    agent = request.param
    env_var = AGENTS[agent][1]

    def make(**kwargs):
        return controller(env_var, **kwargs)

    def config(url: str, **extra):
        return setup(agent, url, **extra)[1]

    api = "anthropic" if agent == "claude-code" else "openai"
    return CliUnderTest(f"acp:{agent}", model_for(agent), workspace, make, config, api=api)


class TestStructured(PromptedStructuredScenarios):
    pass
