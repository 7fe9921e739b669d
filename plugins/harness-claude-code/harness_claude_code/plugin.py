"""Entry point: registers the ``claude-code`` harness and its conformance profile (the real CLI
against the fake model's Messages API)."""

from __future__ import annotations

from harness_cli_kit.conformance import OfflineProfile
from harness_cli_kit.plugin import cli_hooks

from .adapter import ClaudeCodeAdapter

OFFLINE = OfflineProfile(
    "claude",
    "claude-test",
    "sk-ant-conformance",
    "anthropic",
    "cli_path",
    # the kit's approvals check: a shell call Claude Code must ask the host about
    approval_call=("Bash", {"command": "touch approved.txt", "description": "touch"}),
)

register_harnesses, conformance_profile = cli_hooks("claude-code", ClaudeCodeAdapter, OFFLINE)
