"""The Claude Code harness as its tests drive it (fixtures ``workspace``/``make_controller``
come from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

import pytest
from harness_claude_code import ClaudeCodeAdapter
from harness_cli_kit.testing import CliUnderTest, StaticCredentials, installed_cli

SECRET = "sk-ant-test-secret-1234"


@pytest.fixture
def cli(workspace, make_controller) -> CliUnderTest:
    def controller(**kwargs):
        creds = StaticCredentials("ANTHROPIC_API_KEY", SECRET)
        return make_controller(ClaudeCodeAdapter(), creds, **kwargs)

    def config(url: str, **extra):
        return {"cli_path": installed_cli("claude"), "base_url": url, **extra}

    return CliUnderTest("claude-code", "claude-test", workspace, controller, config)
