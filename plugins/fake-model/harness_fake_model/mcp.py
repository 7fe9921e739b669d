"""MCP tool calls in each CLI's naming, resolved against the tools the request offers.

A script says ``ToolCall("lookup", {...}, mcp_server="harness")``; the CLIs name that tool
differently: Claude Code (and agents built on it) ``mcp__harness__lookup`` - often deferred
behind its tool search, so absent from the request; OpenCode ``harness_lookup``; Codex offers a
Responses-API ``namespace`` tool ``mcp__harness`` and runs only a ``function_call`` carrying
``"namespace": "mcp__harness"`` with the bare name; Pi's ``pi-mcp-adapter`` offers one proxy
tool ``mcp`` taking ``{"tool": "harness_lookup", "args": "<JSON object text>"}``.
"""

from __future__ import annotations

import json
from dataclasses import replace

from .recording import RecordedRequest
from .script import Step, ToolCall


def resolve_call(call: ToolCall, offered: list[str]) -> ToolCall:
    server = call.mcp_server
    if server is None:
        return call
    claude = f"mcp__{server}__{call.name}"
    if claude in offered:
        return replace(call, name=claude, mcp_server=None)
    if f"{server}_{call.name}" in offered:
        return replace(call, name=f"{server}_{call.name}", mcp_server=None)
    if f"mcp__{server}" in offered:
        return replace(call, namespace=f"mcp__{server}", mcp_server=None)
    if "mcp" in offered:
        arguments = (
            call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        )
        proxy = {"tool": f"{server}_{call.name}", "args": arguments}
        return replace(call, name="mcp", arguments=proxy, mcp_server=None)
    return replace(call, name=claude, mcp_server=None)


def resolve_mcp_calls(step: Step, request: RecordedRequest) -> Step:
    """``step`` with its MCP tool calls named as ``request``'s CLI names them."""
    if not any(call.mcp_server for call in step.tool_calls):
        return step
    calls = [resolve_call(call, request.tool_names) for call in step.tool_calls]
    return replace(step, tool_calls=calls)
