"""The harnesses the bridge is shown with: adapter, injected key, config, model, and how the
fake model's script names the host tool call (one script for all: ``mcp_server``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness_cli_kit.testing import installed_cli


@dataclass
class Harness:
    name: str
    adapter: Callable[[], Any]
    key_var: str
    key: str
    model: str
    config: Callable[[Any], dict[str, Any]]
    #: The CLI lives for the session (its token is the session's, sent over stdin).
    session_lived: bool = False


def _claude() -> Any:
    from harness_claude_code import ClaudeCodeAdapter

    return ClaudeCodeAdapter()


def _codex() -> Any:
    from harness_codex import CodexAdapter

    return CodexAdapter()


def _opencode() -> Any:
    from harness_opencode import OpenCodeAdapter

    return OpenCodeAdapter()


def _acp_claude() -> Any:
    from harness_acp import AcpAdapter

    return AcpAdapter("claude-code")


HARNESSES = {
    "claude-code": Harness(
        "claude-code",
        _claude,
        "ANTHROPIC_API_KEY",
        "sk-ant-bridge-test-1234",
        "claude-test",
        lambda s: {"cli_path": installed_cli("claude"), "base_url": s.base_url},
    ),
    "codex": Harness(
        "codex",
        _codex,
        "OPENAI_API_KEY",
        "sk-bridge-test-123456",
        "gpt-test",
        lambda s: {"cli_path": installed_cli("codex"), "base_url": s.openai_base_url},
    ),
    "opencode": Harness(
        "opencode",
        _opencode,
        "OPENAI_API_KEY",
        "sk-bridge-test-123456",
        "gpt-test",
        lambda s: {"command": [installed_cli("opencode")], "base_url": s.openai_base_url},
    ),
    "acp:claude-code": Harness(
        "acp:claude-code",
        _acp_claude,
        "ANTHROPIC_API_KEY",
        "sk-ant-bridge-test-1234",
        "claude-sonnet-4-5",
        lambda s: {"command": [installed_cli("claude-code-acp")], "base_url": s.base_url},
        session_lived=True,
    ),
}
