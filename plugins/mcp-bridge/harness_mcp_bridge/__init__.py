"""harness_mcp_bridge: host tools served to a harness over a loopback MCP server.

One :class:`Bridge` per session (the official ``mcp`` SDK's streamable HTTP transport on
127.0.0.1), a fresh read-only bearer token per run (turn), revoked at the run's end; bridged calls
are recorded in the running turn through a sink the runtime provides. A run whose approvals go
through the bridge (Claude Code's ``--permission-prompt-tool``) gets the permission-prompt tool,
answered by the adapter through the host's approval seam.
"""

from __future__ import annotations

from .server import APPROVAL_TOOL, DEFAULT_NAME, PATH, Bridge
from .tokens import APPROVAL_SCOPE, READ_SCOPE, TokenTable
from .tools import (
    DEFAULT_MAX_CALLS_PER_TURN,
    DEFAULT_MAX_RESULT_BYTES,
    EVENT_PREFIX,
    Answer,
    Limits,
    Sink,
    select_tools,
)

__all__ = [
    "APPROVAL_SCOPE",
    "APPROVAL_TOOL",
    "DEFAULT_MAX_CALLS_PER_TURN",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_NAME",
    "EVENT_PREFIX",
    "PATH",
    "READ_SCOPE",
    "Answer",
    "Bridge",
    "Limits",
    "Sink",
    "TokenTable",
    "select_tools",
]
