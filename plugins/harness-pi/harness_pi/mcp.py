"""The session's host tools for pi, through the ``pi-mcp-adapter`` extension (pi has no MCP
client of its own; the extension is pinned in ``tools/npm``).

The extension reads ``mcp.json`` in the private agent dir: one HTTP server, the bridge, whose
bearer token it takes from the variable the runtime puts in the turn's environment
(``bearerTokenEnv``) - the token is in neither argv nor the file. Its tools are reached through
the extension's ``mcp`` proxy tool (``{"tool": "<server>_<tool>", "args": "<json>"}``); direct
tools would need its metadata cache, which a fresh session does not have yet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_cli_kit import find_cli
from harness_hookspecs import HarnessError, McpBridge

#: The npm package and release verified with pi 0.73.1 (later ones need the renamed pi).
PACKAGE = "pi-mcp-adapter"
TESTED = "2.11.0"
#: The extension's proxy tool.
PROXY_TOOL = "mcp"
#: Read by ``extensions/approvals.ts``: proxy calls to this server's tools run unasked.
TRUSTED_SERVER_VAR = "HARNESS_PI_TRUSTED_MCP_SERVER"


def extension_path(config: Mapping[str, Any]) -> str:
    """``mcp_extension`` from the session config, else the installed package's entry (found
    through its ``pi-mcp-adapter`` binary); ``provider-unavailable`` when there is none."""
    configured = config.get("mcp_extension")
    if configured is not None:
        if not isinstance(configured, str) or not os.path.isfile(configured):
            raise HarnessError("invalid-request", "mcp_extension must name an existing file")
        return configured
    binary = find_cli({}, PACKAGE)
    entry = Path(os.path.realpath(binary)).parent / "index.ts" if binary else None
    if entry is None or not entry.is_file():
        raise HarnessError(
            "provider-unavailable", f"host tools need the {PACKAGE} pi extension (not installed)"
        )
    return str(entry)


def mcp_config(bridge: McpBridge) -> dict[str, Any]:
    """The extension's ``mcp.json``: the bridge only, no sampling or dialogs, tools through
    the proxy named ``<server>_<tool>``."""
    server = {
        "url": bridge.url,
        "auth": "bearer",
        "bearerTokenEnv": bridge.token_env,
        "lifecycle": "lazy",
    }
    settings = {"toolPrefix": "server", "sampling": False, "elicitation": False, "autoAuth": False}
    return {"settings": settings, "mcpServers": {bridge.name: server}}


def write_config(agent: Path, bridge: McpBridge) -> Path:
    path = agent / "mcp.json"
    path.write_text(json.dumps(mcp_config(bridge), indent=2))
    return path
