"""Host tools for a session: which it gets, and its loopback MCP bridge's lifetime.

The bridge itself is the ``harnessplane-mcp-bridge`` distribution, found through its entry point
(:mod:`.extensions`) and imported only when a session selects tools. The controller starts it at open/resume (before the adapter, so an agent that
lives for the session can be told where it is), hands each turn a fresh token through the
context, revokes that token before the turn's terminal event, and stops the bridge at close.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import anyio.abc
from harness_hookspecs import HarnessError, HostTool, McpBridge, Payload
from harness_hookspecs.host_tools import ToolCaller

from . import extensions

CONFIG_KEY = "mcp_loopback"


class ToolBridge(Protocol):
    """A session's running tool bridge, as the context drives it (``harnessplane-mcp-bridge``'s
    ``Bridge``, found through the ``harness_core.tool_bridge`` entry point ``mcp-loopback``)."""

    @property
    def endpoint(self) -> McpBridge: ...

    def begin_run(
        self, run_id: str, sink: Callable[[Payload], bool], *, deadline: float | None = None
    ) -> str: ...

    def session_token(self) -> str: ...

    def serve_approvals(
        self, run_id: str, answer: Callable[[Mapping[str, Any]], Awaitable[str]]
    ) -> str | None: ...

    def end_run(self, run_id: str) -> None: ...

    async def run(self, *, task_status: Any = ...) -> None: ...

    async def close(self) -> None: ...


def merge_tools(registered: Iterable[HostTool], explicit: Sequence[HostTool]) -> list[HostTool]:
    """The plugins' tools and the host's (a host tool of the same name replaces the plugin's)."""
    chosen = {tool.name: tool for tool in registered}
    for tool in explicit:
        if not isinstance(tool, HostTool):
            raise HarnessError("invalid-request", "host_tools must be HostTool objects")
        chosen[tool.name] = tool
    return list(chosen.values())


async def start_bridge(
    tools: Sequence[HostTool],
    config: Mapping[str, Any],
    task_group: anyio.abc.TaskGroup | None,
    caller: ToolCaller | None = None,
) -> ToolBridge | None:
    """Start the session's bridge if it selects any tool (``config["mcp_loopback"]``)."""
    if not tools:
        return None
    settings = config.get(CONFIG_KEY, {})
    try:
        kit = extensions.load(extensions.TOOL_BRIDGE_GROUP, "mcp-loopback")
    except ImportError:
        if CONFIG_KEY in config:
            raise HarnessError(
                "invalid-request", "host tools need harnessplane-mcp-bridge installed"
            ) from None
        return None
    selected = kit.select_tools(tools, settings)
    if not selected:
        return None
    if task_group is None:
        raise HarnessError("invalid-request", "the controller is not running (use async with)")
    bridge: ToolBridge = kit.Bridge(
        selected, limits=kit.Limits.from_config(settings), caller=caller
    )
    try:
        await task_group.start(bridge.run)
    except HarnessError:
        raise
    except Exception:
        raise HarnessError("provider-unavailable", "the MCP bridge did not start") from None
    return bridge
