"""Host tools: read-only functions a host offers the harness through the loopback MCP bridge.

A plugin registers them with ``register_host_tools``; a host app passes them to its controller
explicitly. The runtime serves the tools a session selects (its include/exclude patterns) on a
loopback MCP server with a per-turn read-only bearer token, and tells the adapter where that
server is through :class:`McpBridge` (``context.mcp_bridge``). The token itself reaches the
harness's processes only through the environment variable :attr:`McpBridge.token_env`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
from attrs import field, frozen

from . import bounds as _bounds
from .values import Value

#: MCP tool names the pinned CLIs accept in every naming scheme they derive (``mcp__S__T``,
#: ``S_T``, a Responses-API namespace): letters, digits, ``_`` and ``-``.
_TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")

#: The environment variable that carries a run's bridge token into the harness's processes.
TOKEN_ENV = "HARNESS_MCP_TOKEN"

#: A host tool's function: ``await function(arguments)`` -> text (str) or JSON-able data.
HostToolFunction = Callable[..., Awaitable[Any]]


def _tool_name(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not _TOOL_NAME.match(value):
        raise ValueError(f"{attribute.name} must be 1-64 letters, digits, '_' or '-'")


def _schema(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or value.get("type", "object") != "object":
        raise ValueError("input_schema must be a JSON Schema object with type 'object'")
    return MappingProxyType({"type": "object", **dict(value)})


def _async_function(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    method = type(value).__call__ if callable(value) else None
    if not (inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(method)):
        raise ValueError("function must be an async function")


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@frozen(repr=False, eq=False)
class ToolCaller(Value):
    """Who calls a host tool (seed 004 section 8: a call runs as the run's user): the session,
    the turn, the harness, the agent and user the session runs for, its posture, and the call."""

    session_id: str
    harness: str
    turn_id: str | None = None
    agent: str | None = None
    user: str | None = None
    posture: str = "auto"
    #: the call's id in the turn's record (its ``tool.started``'s ``call_id``), when known
    call_id: str | None = None


@frozen(repr=False, eq=False)
class HostTool(Value):
    """One tool: ``await function(arguments)`` answers a call (str or JSON-able); a function
    with a second parameter gets the :class:`ToolCaller` too. ``mutating``: the tool changes
    something, so it is served only to a session granted it (``mcp_loopback.grant``)."""

    name: str = field(validator=_tool_name)
    description: str = field(validator=_bounds.bounded(1, 2000, multiline=True))
    function: HostToolFunction = field(validator=_async_function, eq=False)
    input_schema: Mapping[str, Any] = field(
        converter=_schema, factory=lambda: {"type": "object", "properties": {}}
    )
    mutating: bool = field(default=False, validator=attrs.validators.instance_of(bool))

    @property
    def takes_caller(self) -> bool:
        """Whether ``function`` accepts the caller as its second argument."""
        try:
            parameters = inspect.signature(self.function).parameters.values()
        except (TypeError, ValueError):
            return False
        positional = [
            p
            for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
        return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


@frozen(repr=False, eq=False)
class McpBridge(Value):
    """Where a session's loopback MCP server is, as an adapter configures its CLI with it.

    ``name`` is the server name the CLI knows (its tools become ``mcp__<name>__<tool>`` in Claude
    Code, ``<name>_<tool>`` in OpenCode, namespace ``mcp__<name>`` in Codex). ``url`` is the
    streamable-HTTP endpoint on 127.0.0.1. The bearer token is never here: the turn's processes
    find it in the environment variable ``token_env``.
    """

    name: str = field(validator=_tool_name)
    url: str = field(validator=_bounds.bounded(1, 256))
    tools: tuple[str, ...] = field(converter=_names, default=())
    token_env: str = TOKEN_ENV


__all__ = ["TOKEN_ENV", "HostTool", "HostToolFunction", "McpBridge", "ToolCaller"]
