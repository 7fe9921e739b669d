"""The session's loopback MCP bridge as each CLI's config names it.

The runtime serves host tools on ``context.mcp_bridge`` (name, url, token variable) and puts the
run's bearer token in the turn's environment under ``token_env``; these helpers render the
server entry each CLI reads, always as a *reference* to that variable - the token itself is
never written to a config file or put on a command line.
"""

from __future__ import annotations

from typing import Any

from harness_hookspecs import McpBridge, SessionContext


def bridge_of(context: SessionContext) -> McpBridge | None:
    """The session's bridge, or None (no host tools, or a context without one)."""
    bridge = getattr(context, "mcp_bridge", None)
    return bridge if isinstance(bridge, McpBridge) else None


def claude_mcp_config(bridge: McpBridge) -> dict[str, Any]:
    """Claude Code's ``--mcp-config`` file: it expands ``${VAR}`` in headers itself."""
    header = "Bearer ${" + bridge.token_env + "}"
    server = {"type": "http", "url": bridge.url, "headers": {"Authorization": header}}
    return {"mcpServers": {bridge.name: server}}


def codex_mcp_toml(bridge: McpBridge) -> str:
    """Codex's ``[mcp_servers.NAME]`` table: it reads the bearer token from the variable."""
    return "\n".join(
        [
            f"[mcp_servers.{bridge.name}]",
            f'url = "{bridge.url}"',
            f'bearer_token_env_var = "{bridge.token_env}"',
            "",
        ]
    )


def opencode_mcp(bridge: McpBridge) -> dict[str, Any]:
    """OpenCode's ``mcp`` section: ``{env:VAR}`` is substituted when the config loads."""
    header = "Bearer {env:" + bridge.token_env + "}"
    server = {
        "type": "remote",
        "url": bridge.url,
        "oauth": False,
        "enabled": True,
        "headers": {"Authorization": header},
    }
    return {bridge.name: server}
