"""The Claude Code harness as its tests drive it: the ``cli`` fixture (``workspace`` and
``make_controller`` come from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

from harness_claude_code import ClaudeCodeAdapter
from harness_claude_code.plugin import OFFLINE
from harness_cli_kit.testing import cli_fixture

SECRET = "sk-ant-test-secret-1234"

cli = cli_fixture("claude-code", OFFLINE, ClaudeCodeAdapter, "ANTHROPIC_API_KEY", SECRET)
