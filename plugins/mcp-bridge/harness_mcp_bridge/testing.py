"""The harnesses the bridge is shown with, for its test suite and benchmark: adapter, injected
key, model and config against the fake model server. The adapters and harness_cli_kit's test
helpers (pytest) are imported only when used."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def installed_cli(name: str) -> str:
    from harness_cli_kit.testing import installed_cli as find

    return find(name)


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


def _pi() -> Any:
    from harness_pi import PiAdapter

    return PiAdapter()


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
    "pi": Harness(
        "pi",
        _pi,
        "OPENAI_API_KEY",
        "sk-bridge-test-123456",
        "gpt-test",
        lambda s: {"command": [installed_cli("pi")], "base_url": s.openai_base_url},
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


#: The MCP protocol version the test clients speak, and their ``initialize`` request.
PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "harness-test", "version": "1"},
    },
}


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 2) -> dict[str, Any]:
    """A JSON-RPC request body."""
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


async def mcp_post(url: str, token: str | None, body: dict[str, Any], **headers: str) -> Any:
    """POST one MCP message to the bridge (httpx), with ``token`` as the bearer if given."""
    import httpx

    sent = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient() as client:
        return await client.post(url, json=body, headers={**sent, **headers})
