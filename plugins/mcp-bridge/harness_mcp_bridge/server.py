"""The loopback MCP server of one session: the official SDK's streamable HTTP transport behind
a Host check and a bearer-token check, served by uvicorn on a socket bound to 127.0.0.1.

The SDK runs in stateless mode: every HTTP request is handled in a task started from the
request's own context, so the run the token was checked for (a context variable set by the auth
layer) is the run the tool call is recorded in. uvicorn needs the asyncio backend.
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import anyio
import attrs
import mcp_types as types
import uvicorn
from anyio.abc import TaskStatus
from harness_hookspecs import HarnessError, HostTool, McpBridge
from harness_hookspecs.host_tools import ToolCaller
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from .tokens import APPROVAL_SCOPE, READ_SCOPE, TokenTable
from .tools import Answer, Limits, RunCalls, Sink

PATH = "/mcp"
LOOPBACK = "127.0.0.1"
DEFAULT_NAME = "harness"

#: The name the bridge serves a run's permission-prompt tool under (Claude Code:
#: ``--permission-prompt-tool mcp__<server>__approve_tool_call``); no host tool may take it.
APPROVAL_TOOL = "approve_tool_call"

#: The run the request's token acts for, and the token's scopes.
_current: contextvars.ContextVar[tuple[str, frozenset[str]] | None] = contextvars.ContextVar(
    "harness_mcp_run", default=None
)


class _Quiet(uvicorn.Server):
    """uvicorn without its signal handlers: the host process owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _reply(
    send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Guard:
    """Host check (DNS rebinding: 421), then bearer check (401 + ``WWW-Authenticate``)."""

    def __init__(self, app: ASGIApp, bridge: Bridge) -> None:
        self.app = app
        self.bridge = bridge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if headers.get(b"host", b"").decode("latin-1") != self.bridge.authority:
            await _reply(send, 421, b"Invalid Host header", ())
            return
        auth = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, token = auth.partition(" ")
        checked = self.bridge.tokens.check(token.strip() if scheme.lower() == "bearer" else None)
        if checked is None:
            challenge = b'Bearer realm="harness-mcp", error="invalid_token"'
            await _reply(send, 401, b"Unauthorized", ((b"www-authenticate", challenge),))
            return
        reset = _current.set(checked)
        try:
            await self.app(scope, receive, send)
        finally:
            _current.reset(reset)


class Bridge:
    """One session's bridge: serve with ``await task_group.start(bridge.run)``, then
    :meth:`begin_run` / :meth:`end_run` around each turn, :meth:`close` at the end."""

    def __init__(
        self,
        tools: Sequence[HostTool],
        *,
        name: str = DEFAULT_NAME,
        limits: Limits | None = None,
        caller: ToolCaller | None = None,
    ) -> None:
        if not tools:
            raise HarnessError("invalid-request", "a bridge needs at least one host tool")
        if any(tool.name == APPROVAL_TOOL for tool in tools):
            raise HarnessError("invalid-request", f"{APPROVAL_TOOL} is the bridge's own tool")
        self.name = name
        self.tools: Mapping[str, HostTool] = {tool.name: tool for tool in tools}
        self.limits = limits or Limits()
        #: the session's caller; each run's calls get it with their turn id
        self.caller = caller
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by accepted connections: without it a reply's small writes wait for the
        # client's delayed ACK (~40 ms a call).
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind((LOOPBACK, 0))
        self.port: int = self._sock.getsockname()[1]
        self.authority = f"{LOOPBACK}:{self.port}"
        self.url = f"http://{self.authority}{PATH}"
        self.tokens = TokenTable(audience=self.url)
        self._runs: dict[str, RunCalls] = {}
        self._session_token: str | None = None
        self._server: _Quiet | None = None
        self._stopped = anyio.Event()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the bridge's socket is bound to: always on 127.0.0.1."""
        host, port = self._sock.getsockname()[:2]
        return host, port
        self.startup_seconds: float | None = None

    @property
    def endpoint(self) -> McpBridge:
        return McpBridge(name=self.name, url=self.url, tools=tuple(self.tools.keys()))

    # -- tokens ------------------------------------------------------------------------------

    def begin_run(self, run_id: str, sink: Sink, *, deadline: float | None = None) -> str:
        """Make ``run_id`` the active run; return its new token (expiring at ``deadline``)."""
        caller = None if self.caller is None else attrs.evolve(self.caller, turn_id=run_id)
        self._runs[run_id] = RunCalls(run_id, sink, self.limits, caller)
        self.tokens.active_run = run_id
        return self.tokens.mint(run_id, expires_at=deadline)

    def session_token(self) -> str:
        """The token of a session-lived agent: honoured only while one of its runs is active."""
        if self._session_token is None:
            self._session_token = self.tokens.mint(None, expires_at=time.monotonic() + 86400 * 7)
        return self._session_token

    def serve_approvals(self, run_id: str, answer: Answer) -> str | None:
        """Answer the run's permission prompts with ``answer`` (the adapter's, asking the host's
        approval seam): the run's token gains :data:`APPROVAL_SCOPE`, which lists and calls
        :data:`APPROVAL_TOOL`. Returns that tool's name; None when the run is not active."""
        calls = self._runs.get(run_id)
        if calls is None or self.tokens.active_run != run_id:
            return None
        calls.answer = answer
        self.tokens.grant_scope(run_id, APPROVAL_SCOPE)
        return APPROVAL_TOOL

    def end_run(self, run_id: str) -> None:
        """Revoke the run's token and cancel its calls in flight (they record nothing more)."""
        self.tokens.revoke_run(run_id)
        calls = self._runs.pop(run_id, None)
        if calls is not None:
            calls.end()

    # -- MCP handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=dict(tool.input_schema),
                annotations=types.ToolAnnotations(read_only_hint=True),
            )
            for tool in self.tools.values()
        ]
        if _may_approve():
            tools.append(_APPROVAL_TOOL)
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        current = _current.get()
        run_id = current[0] if current else None
        calls = self._runs.get(run_id) if run_id else None
        if calls is None or self.tokens.active_run != run_id:
            return _result("The run has ended.", error=True)
        arguments = params.arguments if isinstance(params.arguments, Mapping) else {}
        if params.name == APPROVAL_TOOL and _may_approve():
            # One text block: the CLI parses it (Claude Code: {"behavior": ...} JSON).
            outcome = await calls.approve(arguments)
            return _result(outcome.text, error=not outcome.ok)
        tool = self.tools.get(params.name)
        if tool is None:
            return _result("No such host tool.", error=True)
        outcome = await calls.call(tool, arguments)
        return _result(outcome.text, error=not outcome.ok)

    # -- serving -----------------------------------------------------------------------------

    def _app(self) -> ASGIApp:
        server: Server[Any] = Server(
            self.name,
            version="1",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        app = server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            json_response=True,
            host=LOOPBACK,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[self.authority],
                allowed_origins=[f"http://{self.authority}"],
            ),
        )
        return _Guard(app, self)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until :meth:`close`; ``task_status.started()`` once requests are answered."""
        started = time.perf_counter()
        config = uvicorn.Config(
            self._app(), log_config=None, access_log=False, lifespan="on", log_level="error"
        )
        self._server = server = _Quiet(config)
        self._sock.listen(64)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(server.serve, [self._sock])
                while not server.started:
                    if server.should_exit:
                        raise HarnessError("provider-unavailable", "the MCP bridge did not start")
                    await anyio.sleep(0.002)
                self.startup_seconds = time.perf_counter() - started
                task_status.started()
        finally:
            self.tokens.revoke_all()
            self._sock.close()
            self._stopped.set()

    async def close(self) -> None:
        """Revoke every token and stop serving (idempotent)."""
        self.tokens.revoke_all()
        if self._server is not None:
            self._server.should_exit = True
            with anyio.move_on_after(5):
                await self._stopped.wait()
        else:
            self._sock.close()


def _may_approve() -> bool:
    current = _current.get()
    return current is not None and APPROVAL_SCOPE in current[1]


_APPROVAL_TOOL = types.Tool(
    name=APPROVAL_TOOL,
    description="The host's answer to a tool call that needs permission (the CLI's own prompt).",
    input_schema={
        "type": "object",
        "properties": {
            "tool_name": {"type": "string"},
            "input": {"type": "object"},
            "tool_use_id": {"type": "string"},
        },
        "required": ["tool_name", "input"],
    },
)


def _result(text: str, *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


__all__ = ["APPROVAL_SCOPE", "APPROVAL_TOOL", "DEFAULT_NAME", "PATH", "READ_SCOPE", "Bridge"]
