"""The ACP adapter: one session-lifetime agent process per session, JSON-RPC over its stdio.

The official ``agent-client-protocol`` SDK provides the JSON-RPC connection (request ids,
responses, errors) and the request models; the adapter provides the transport (the runtime's
:class:`~harness_hookspecs.ProcessHandle`, so the agent runs in the sandbox, in its own process
group, killed on close) and the client side: ``session/update`` notifications become events,
``session/request_permission`` asks the runtime's approval seam (``context.request_permission``:
the host's handler, policy plugins, the posture; recorded as ``permission.requested``/
``permission.resolved``), and file-system/terminal capabilities are off.

The connection's reader (``Connection.main_loop``) and each turn's ``session/prompt`` request run
as session tasks through the runtime's ``start_soon``, each in a cancel scope the adapter owns and
cancels on close or when the turn ends. The SDK is asyncio-based, so this plugin needs the asyncio
backend. Importing the SDK takes 0.4-0.7 s (its pydantic models): it happens on a worker thread
once the agent process is spawned, so it overlaps the agent's own start-up, and nothing else of
the adapter (``describe``, ``harness list``) imports it.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from anyio.streams.memory import MemoryObjectSendStream
from harness_cli_kit import (
    CLI_CONFIG_PROPERTIES,
    COMMAND_PROPERTY,
    NativeSession,
    Thinking,
    bridge_of,
    config_schema,
    find_cli,
    located,
    preflight,
    require_workspace,
    usage_of,
)
from harness_cli_kit.calls import audit_summary, permission_request
from harness_cli_kit.classify import auth_hint, reason_from
from harness_cli_kit.safe import is_safe_name
from harness_cli_kit.tools import ToolCalls, call_id_of
from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    ConversationTurn,
    ForkSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    OpenSessionRequest,
    Payload,
    PermissionRequest,
    ProcessHandle,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    UsageReported,
    assert_supported,
)

from .registry import AGENTS

if TYPE_CHECKING:
    from acp.connection import Connection

#: The ACP protocol version this adapter speaks (the SDK's ``acp.PROTOCOL_VERSION``; a test
#: keeps them equal), known without importing the SDK.
ACP_PROTOCOL_VERSION = 1
STATE_FILE = "acp-session.json"
#: Seconds a fork waits for an agent that saves its sessions lazily (see ``AgentSpec.saved``).
SAVE_WAIT = 10.0
#: The turns the agent's conversation holds, oldest first (a fork checks its point against it).
TURNS_FILE = "acp-turns.json"
INIT_TIMEOUT = 60.0
KIND_SUMMARIES = {
    "read": "read a file",
    "edit": "edited a file",
    "delete": "deleted a file",
    "move": "moved a file",
    "search": "searched files",
    "execute": "ran a command",
    "think": "thought",
    "fetch": "fetched a resource",
    "switch_mode": "switched mode",
}
_AUTH = re.compile(r"\b401\b|\b403\b|authenticat|unauthori[sz]ed|invalid api key|api key", re.I)
_UNREACHABLE = re.compile(
    r"connect|ECONNREFUSED|ENOTFOUND|fetch failed|network|\b50[234]\b|\b429\b|overloaded", re.I
)


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _load_sdk() -> None:
    """Import the ACP SDK (every part of it loads with the package)."""
    import acp.connection  # noqa: F401


def classify_error(error: BaseException) -> str:
    """A fixed reason for a failed ``session/prompt`` (its text is never forwarded)."""
    from acp import RequestError

    if isinstance(error, RequestError):
        if error.code == -32000:
            return "authentication-required"
        text = f"{error} {json.dumps(error.data, default=str) if error.data else ''}"
        return reason_from(None, text, auth=_AUTH, unreachable=_UNREACHABLE)
    return "provider-failed"  # the connection dropped, or anything else


def _ran_turns(state_dir: str) -> list[ConversationTurn]:
    """The turns the session's agent ran, oldest first (:data:`TURNS_FILE`): each one's id,
    prompt and, once it completed, answer."""
    try:
        saved = json.loads((Path(state_dir) / TURNS_FILE).read_text())
    except (OSError, ValueError):
        return []
    turns = []
    for entry in saved if isinstance(saved, list) else []:
        try:
            turns.append(ConversationTurn(entry["turn_id"], entry["prompt"], entry.get("answer")))
        except (KeyError, TypeError, ValueError):
            continue
    return turns


def _save_turns(state_dir: str, turns: Sequence[ConversationTurn]) -> None:
    path = Path(state_dir) / TURNS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([attrs.asdict(turn) for turn in turns]))
    tmp.replace(path)


def _answered(state_dir: str, turn_id: str, answer: str | None) -> None:
    """Note the answer of the agent's last turn ``turn_id``."""
    turns = _ran_turns(state_dir)
    if turns and turns[-1].turn_id == turn_id:
        _save_turns(state_dir, [*turns[:-1], attrs.evolve(turns[-1], answer=answer)])


async def _saved(
    saved: Callable[[Path, str, str, str | None], bool],
    home: Path,
    native_id: str,
    turn: ConversationTurn,
) -> None:
    """Wait (up to :data:`SAVE_WAIT` s) until the agent saved ``turn`` of its native session
    (and so every turn before it); past that, the fork goes on with what it saved."""
    with anyio.move_on_after(SAVE_WAIT):
        while not await anyio.to_thread.run_sync(saved, home, native_id, turn.prompt, turn.answer):
            await anyio.sleep(0.1)


def _copy_home(parent_state: Path, child_state: Path) -> None:
    """The parent's agent home (its config and transcripts) as the child's, before its agent
    starts: the agent forks what it finds there."""
    source = parent_state / "home"
    if source.is_dir():
        shutil.copytree(source, child_state / "home", symlinks=True, dirs_exist_ok=True)


class ProcessTransport:
    """An ACP SDK ``Transport`` over the runtime's process handle (newline-delimited JSON)."""

    def __init__(self, process: ProcessHandle) -> None:
        self.process = process
        self._lines = process.lines()

    async def send(self, message: dict[str, Any]) -> None:
        await self.process.send((json.dumps(message, separators=(",", ":")) + "\n").encode())

    async def receive(self) -> dict[str, Any] | None:
        async for line in self._lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):  # nested past the interpreter's depth too
                continue  # agents log to stdout now and then; not JSON-RPC
            if isinstance(message, dict):
                return message
        return None

    async def close(self) -> None:
        try:
            await self.process.close_stdin()
        except Exception:
            pass


class _Turn:
    def __init__(self, sink: MemoryObjectSendStream[tuple[str, Any]]) -> None:
        self.sink = sink
        self.tools = ToolCalls(KIND_SUMMARIES)
        self.text: list[str] = []
        #: ``agent_thought_chunk``s: a block ends at the agent's next other update
        self.thinking = Thinking()

    def put(self, item: tuple[str, Any]) -> None:
        try:
            self.sink.send_nowait(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


class _Session:
    def __init__(self, context: SessionContext) -> None:
        self.context = context
        self.process: ProcessHandle | None = None
        self.conn: Connection | None = None
        self.native_id: str | None = None
        self.can_load = False
        self.can_fork = False
        self.mcp_http = False
        self.turn: _Turn | None = None
        self.scopes: list[anyio.CancelScope] = []
        self.base_url: str | None = None

    def start(self, function: Any, *args: Any) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        self.scopes.append(scope)

        async def runner() -> None:
            with scope:
                await function(*args)

        start_soon = getattr(self.context, "start_soon", None)
        if start_soon is None:
            raise HarnessError("provider-failed", "the runtime cannot run session tasks")
        start_soon(runner)
        return scope


def _safe_tool_name(update: Mapping[str, Any]) -> str:
    meta = update.get("_meta")
    if isinstance(meta, Mapping):
        for value in meta.values():
            name = value.get("toolName") if isinstance(value, Mapping) else None
            if is_safe_name(name):
                return str(name)
    kind = update.get("kind")
    return kind if isinstance(kind, str) and is_safe_name(kind) else "tool"


def _bridge_tool(context: SessionContext, tool_call: Mapping[str, Any]) -> bool:
    """Whether an agent's permission request is for one of the bridge's host tools (Claude
    Code's agent titles such a call ``mcp__<server>__<tool>``)."""
    bridge = bridge_of(context)
    title = tool_call.get("title")
    if bridge is None or not isinstance(title, str):
        return False
    prefix = f"mcp__{bridge.name}__"
    return title.startswith(prefix) and title[len(prefix) :] in bridge.tools


def map_update(turn: _Turn, update: Mapping[str, Any]) -> list[Payload]:
    """Map one ``session/update`` payload to contract events (pure, for tests too)."""
    kind = update.get("sessionUpdate")
    if kind == "agent_thought_chunk":
        content = update.get("content")
        if isinstance(content, Mapping) and content.get("type") == "text":
            return turn.thinking.delta(content.get("text"))
        return []
    out: list[Payload] = turn.thinking.completed() if turn.thinking.streaming else []
    if kind == "agent_message_chunk":
        content = update.get("content")
        if isinstance(content, Mapping) and content.get("type") == "text":
            text = content.get("text")
            if isinstance(text, str) and text:
                turn.text.append(text)
                out.append(MessageDelta(text=text))
    elif kind in ("tool_call", "tool_call_update"):
        call_id = call_id_of(update.get("toolCallId"))
        if call_id is None:
            return out
        name = _safe_tool_name(update)
        tool_kind = update.get("kind")
        summary = turn.tools.summary(tool_kind) if isinstance(tool_kind, str) else None
        out += turn.tools.start(
            call_id, name, audit_summary(name, update.get("rawInput")) or summary
        )
        status = update.get("status")
        if status in ("completed", "failed"):
            out += turn.tools.finish(call_id, name, status == "completed", summary)
    return out


_ACP_KINDS = {
    "execute": "shell",
    "edit": "write",
    "delete": "write",
    "move": "write",
    "read": "read",
    "search": "read",
    "fetch": "fetch",
}


def permission_request_of(tool_call: Mapping[str, Any]) -> PermissionRequest:
    """The approval request for an ACP ``toolCall`` (its ``rawInput`` names the command or
    path; the ACP ``kind`` says what it does when the name does not)."""
    name = _safe_tool_name(tool_call)
    raw = tool_call.get("rawInput")
    request = permission_request(name, raw if isinstance(raw, Mapping) else {})
    call_id = call_id_of(tool_call.get("toolCallId"))
    kind = _ACP_KINDS.get(str(tool_call.get("kind")), request.kind)
    if request.kind == "other" and kind != "other":
        request = attrs.evolve(request, kind=kind)
    return attrs.evolve(request, request_id=call_id) if call_id else request


def _usage(result: Mapping[str, Any]) -> UsageReported | None:
    names = ("inputTokens", "outputTokens", "cachedReadTokens", "cachedWriteTokens")
    return usage_of(result.get("usage"), (*names, "thoughtTokens"))


#: The config keys an ACP session reads (registry.py's launchers, the preflight, ``mode``).
CONFIG_PROPERTIES: Mapping[str, Any] = {
    "command": COMMAND_PROPERTY,
    "args": {"type": "array", "items": {"type": ["string", "number"]}},
    "api_key": {"type": "string"},
    "api_key_env": {"type": "string"},
    "base_url": {"type": "string"},
    "env": CLI_CONFIG_PROPERTIES["env"],
    "preflight": {"type": "boolean"},
    "max_retries": {"type": "integer"},
    "provider": {"type": "string"},
    "mode": {"type": "string"},
}


class AcpAdapter:
    """``acp:<agent>``: an Agent Client Protocol agent from the registry, over stdio."""

    def __init__(self, agent: str) -> None:
        if agent not in AGENTS:
            raise ValueError(f"unknown ACP agent {agent!r}")
        self.agent = AGENTS[agent]
        self.name = f"acp:{agent}"
        self._sessions: dict[str, _Session] = {}

    def describe(self) -> HarnessDescriptor:
        details = {"protocol": f"ACP v{ACP_PROTOCOL_VERSION}"}
        if self.agent.tested:
            details["tested_agent"] = self.agent.tested
        if self.agent.fork and self.agent.fork_meta is None:  # ACP forks whole sessions
            details["fork"] = "at the session's last turn only"
        if self.agent.command:  # where the agent is (ACP agents have no common --version)
            path = find_cli({}, self.agent.command[0])
            if path is None:
                details["cli_version"] = "not found"
            else:
                details["cli_path"] = path[-128:]
        return HarnessDescriptor(
            provider=self.name,
            targets=["local"],
            features=["resume", "cancel", "permissions", "usage"]
            + (["mcp"] if self.agent.mcp else [])
            + (["fork"] if self.agent.fork else []),
            version="0.1.0",
            vendor=self.agent.vendor,
            display_name=self.agent.display_name,
            details=details,
            config_schema=config_schema(CONFIG_PROPERTIES),
        )

    # -- connection -------------------------------------------------------------------------

    async def _handle(
        self, session: _Session, method: str, params: Any, is_notification: bool
    ) -> Any:
        params = params if isinstance(params, Mapping) else {}
        turn = session.turn
        if method == "session/update":
            update = params.get("update")
            if turn is not None and isinstance(update, Mapping):
                for payload in map_update(turn, update):
                    turn.put(("event", payload))
            return None
        if method == "session/request_permission":
            return await self._permission(session, params)
        if is_notification:
            return None
        # fs/* and terminal/* are not advertised; anything else is unknown.
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def _permission(self, session: _Session, params: Mapping[str, Any]) -> dict[str, Any]:
        """Ask the runtime (the host, policy plugins, the posture) and select the agent's
        option of the decided kind: options are picked by ``kind``, never by id (agents name
        them differently, and codex-acp's ``abort`` would cancel the whole turn)."""
        options = [o for o in params.get("options") or [] if isinstance(o, Mapping)]
        tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), Mapping) else {}
        assert isinstance(tool_call, Mapping)
        if _bridge_tool(session.context, tool_call):
            allowed = True  # the host's own read-only tools, offered by the host itself
        else:
            decision = await session.context.request_permission(permission_request_of(tool_call))
            allowed = decision.allowed
        wanted = ("allow_once", "allow_always") if allowed else ("reject_once", "reject_always")
        chosen = next((o for k in wanted for o in options if o.get("kind") == k), None)
        if chosen is None or not isinstance(chosen.get("optionId"), str):
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}

    async def _connect(self, session: _Session, context: SessionContext) -> dict[str, Any]:
        home = Path(context.state_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        launch = self.agent.setup(context, home)
        session.base_url = launch.base_url
        argv = located(launch.argv)
        # An inherited IS_SANDBOX=1 makes Claude Code (as root) skip its permission prompts,
        # and claude-code-acp then fails session/new: blank it unless the config sets it.
        env = {"IS_SANDBOX": "", **launch.env}
        if context.workspace:
            env["PWD"] = context.workspace
        process = await context.spawn(
            argv, env=env, cwd=context.workspace, stdin=True, lifetime="session"
        )
        session.process = process
        await anyio.to_thread.run_sync(_load_sdk)  # while the agent starts up
        from acp.connection import Connection
        from acp.schema import (
            ClientCapabilities,
            FileSystemCapabilities,
            Implementation,
            InitializeRequest,
        )

        async def handler(method: str, params: Any, is_notification: bool) -> Any:
            return await self._handle(session, method, params, is_notification)

        conn = Connection(handler, ProcessTransport(process), listening=False)
        session.conn = conn
        session.start(conn.main_loop)
        request = InitializeRequest(
            protocol_version=ACP_PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
            ),
            client_info=Implementation(name="harness_core", version="0.1.0"),
        )
        result = await self._request(session, "initialize", _dump(request), INIT_TIMEOUT)
        caps = result.get("agentCapabilities") if isinstance(result, Mapping) else None
        session.can_load = bool(isinstance(caps, Mapping) and caps.get("loadSession"))
        branching = caps.get("sessionCapabilities") if isinstance(caps, Mapping) else None
        session.can_fork = isinstance(branching, Mapping) and "fork" in branching
        mcp = caps.get("mcpCapabilities") if isinstance(caps, Mapping) else None
        session.mcp_http = bool(isinstance(mcp, Mapping) and mcp.get("http"))
        return result if isinstance(result, dict) else {}

    def _hint(self, reason: str, otherwise: str) -> str:
        """An ``authentication-required`` failure names where the agent's key comes from."""
        if reason != "authentication-required":
            return otherwise
        return auth_hint(
            self.agent.command[0] if self.agent.command else "the agent", self.agent.key_var
        )

    async def _request(
        self, session: _Session, method: str, params: Any, timeout: float | None = None
    ) -> Any:
        from acp import RequestError

        assert session.conn is not None
        try:
            with anyio.fail_after(timeout if timeout is not None else math.inf):
                return await session.conn.send_request(method, params)
        except TimeoutError:
            raise HarnessError(
                "provider-unavailable", f"the agent did not answer {method}"
            ) from None
        except RequestError as error:
            reason = classify_error(error)
            raise HarnessError(reason, self._hint(reason, f"the agent refused {method}")) from None
        except ConnectionError:
            raise HarnessError("provider-failed", "the agent exited") from None

    def _mcp_servers(self, session: _Session, context: SessionContext) -> list[Any]:
        """The host tools' bridge, for an agent that speaks HTTP MCP. The agent lives for the
        whole session, so it gets the session's token (honoured only while a turn runs), over
        its stdin - never on a command line or in a file."""
        bridge = bridge_of(context)
        token_of = getattr(context, "mcp_session_token", None)
        if bridge is None or not session.mcp_http or token_of is None:
            return []
        from acp.schema import HttpHeader, HttpMcpServer

        header = HttpHeader(name="Authorization", value=f"Bearer {token_of()}")
        return [HttpMcpServer(type="http", name=bridge.name, url=bridge.url, headers=[header])]

    async def _set_mode(self, session: _Session, context: SessionContext) -> None:
        mode = context.config.get("mode")
        if isinstance(mode, str) and mode and session.native_id:
            from acp.schema import SetSessionModeRequest

            request = SetSessionModeRequest(session_id=session.native_id, mode_id=mode)
            await self._request(session, "session/set_mode", _dump(request), INIT_TIMEOUT)

    # -- lifecycle --------------------------------------------------------------------------

    async def _start(
        self, context: SessionContext, establish: Callable[[_Session], Awaitable[str]]
    ) -> _Session:
        """A new agent for the session whose native session ``establish`` makes (new, load or
        fork; it returns the native id); the agent is stopped when anything fails."""
        session = _Session(context)
        try:
            await self._connect(session, context)
            session.native_id = await establish(session)
            context.report_vendor_session_id(session.native_id)
            await self._set_mode(session, context)
        except BaseException:
            await self._teardown(session)
            raise
        return session

    def _created(self, context: SessionContext, result: Any) -> str:
        """The native id the agent answered ``session/new`` or ``session/fork`` with, saved."""
        native = result.get("sessionId") if isinstance(result, Mapping) else None
        if not isinstance(native, str) or not native:
            raise HarnessError("provider-failed", "the agent returned no session id")
        NativeSession(context.state_dir, STATE_FILE, native_id=native).save(agent=self.agent.name)
        return native

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        workspace = require_workspace(context, "an ACP session")

        async def new(session: _Session) -> str:
            from acp.schema import NewSessionRequest

            servers = self._mcp_servers(session, context)
            new = NewSessionRequest(cwd=workspace, mcp_servers=servers)
            result = await self._request(session, "session/new", _dump(new), INIT_TIMEOUT)
            return self._created(context, result)

        session = await self._start(context, new)
        ref = SessionRef(provider=self.name, target=request.target, session_id=context.session_id)
        self._sessions[ref.session_id] = session
        return ref

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        workspace = require_workspace(context, "an ACP session")
        native = NativeSession.load(context.state_dir, STATE_FILE, what="no ACP state").native_id
        if native is None:
            raise HarnessError("session-not-found", "no ACP state for this session")

        async def load(session: _Session) -> str:
            if not session.can_load:
                raise HarnessError("unsupported-feature", "the agent cannot load sessions")
            from acp.schema import LoadSessionRequest

            servers = self._mcp_servers(session, context)
            load = LoadSessionRequest(session_id=native, cwd=workspace, mcp_servers=servers)
            # The agent replays the history as session/update notifications: no turn is
            # active, so they are dropped.
            await self._request(session, "session/load", _dump(load), INIT_TIMEOUT)
            return native

        self._sessions[request.session.session_id] = await self._start(context, load)
        return request.session

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        """ACP's ``session/fork`` (unstable; ``claude-code-acp`` advertises it) in the child's
        own agent, over a copy of the parent's agent home (its transcripts). ACP forks a whole
        session; a fork after an earlier turn needs the agent's own cut (``AgentSpec.fork_meta``:
        Claude Code's ``resumeSessionAt``), else it is refused (``unsupported-feature``, nothing
        opened). A fork before the agent's first turn is a new session."""
        assert_supported(self.describe(), request.open.target, "fork")
        workspace = require_workspace(context, "an ACP session")
        parent_dir = request.parent_state_dir
        if parent_dir is None:
            raise HarnessError("invalid-request", "the parent has no ACP state to fork")
        parent = NativeSession.load(parent_dir, STATE_FILE, what="no ACP state").native_id
        if parent is None:
            raise HarnessError("invalid-request", "the parent has no ACP session to fork")
        ran = _ran_turns(parent_dir)
        wanted = {turn.turn_id for turn in request.turns}
        kept = [turn for turn in ran if turn.turn_id in wanted]
        if kept != ran[: len(kept)]:
            raise HarnessError("unsupported-feature", "the agent cannot fork at that point")
        if not kept:
            return await self.open_session(request.open, context)
        home = Path(parent_dir) / "home"
        if self.agent.saved is not None and ran[-1].answer is not None:
            await _saved(self.agent.saved, home, parent, ran[-1])  # the copy holds every turn
        meta: dict[str, Any] | None = None
        if len(kept) < len(ran):
            cut = self.agent.fork_meta
            meta = (
                None
                if cut is None
                else await anyio.to_thread.run_sync(cut, home, parent, len(kept))
            )
            if meta is None:
                raise HarnessError(
                    "unsupported-feature", f"acp:{self.agent.name} forks at the last turn only"
                )
        await anyio.to_thread.run_sync(_copy_home, Path(parent_dir), Path(context.state_dir))

        async def fork(session: _Session) -> str:
            if not session.can_fork:
                raise HarnessError("unsupported-feature", "the agent does not advertise fork")
            from acp.schema import ForkSessionRequest as AcpFork

            servers = self._mcp_servers(session, context)
            fork = AcpFork(session_id=parent, cwd=workspace, mcp_servers=servers, field_meta=meta)
            result = await self._request(session, "session/fork", _dump(fork), INIT_TIMEOUT)
            native = self._created(context, result)
            _save_turns(context.state_dir, kept)
            return native

        session = await self._start(context, fork)
        ref = SessionRef(
            provider=self.name, target=request.open.target, session_id=context.session_id
        )
        self._sessions[ref.session_id] = session
        return ref

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.get(request.session.session_id)
        if session is None or session.conn is None or session.native_id is None:
            raise HarnessError("session-not-found")
        unreachable = await preflight(context, session.base_url)
        if unreachable is not None:
            yield unreachable
            return
        from acp import RequestError
        from acp.schema import PromptRequest, TextContentBlock

        send, receive = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
        turn = _Turn(send)
        session.turn = turn
        prompt = PromptRequest(
            session_id=session.native_id,
            prompt=[TextContentBlock(type="text", text=request.prompt)],
        )
        params = _dump(prompt)

        async def run_prompt() -> None:
            try:
                assert session.conn is not None
                result = await session.conn.send_request("session/prompt", params)
                turn.put(("done", result))
            except RequestError as error:
                turn.put(("error", classify_error(error)))
            except ConnectionError:
                turn.put(("error", "provider-failed"))

        # the turn is in the agent's conversation from here (a fork's point is found by it)
        ran = [*_ran_turns(context.state_dir), ConversationTurn(request.turn_id, request.prompt)]
        await anyio.to_thread.run_sync(_save_turns, context.state_dir, ran)
        scope = session.start(run_prompt)
        finished = False
        try:
            async with receive:
                async for kind, value in receive:
                    if kind == "event":
                        yield value
                        continue
                    finished = True
                    if kind == "error":
                        yield TurnFailed(
                            reason=value, hint=self._hint(value, "the agent reported a failure")
                        )
                        return
                    result = value if isinstance(value, Mapping) else {}
                    for thought in turn.thinking.completed():
                        yield thought
                    if turn.text:
                        yield MessageCompleted(text="".join(turn.text))
                    usage = _usage(result)
                    if usage is not None:
                        yield usage
                    stop = result.get("stopReason")
                    if stop == "cancelled":
                        yield TurnCancelled(by="harness")
                    elif stop == "refusal":
                        yield TurnFailed(reason="provider-failed", hint="the agent refused")
                    else:
                        answer = "".join(turn.text) or None
                        await anyio.to_thread.run_sync(
                            _answered, context.state_dir, request.turn_id, answer
                        )
                        yield TurnCompleted(text=answer)
                    return
        finally:
            session.turn = None
            if not finished:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await self._cancel_native(session)
            scope.cancel()
            if scope in session.scopes:
                session.scopes.remove(scope)

    async def _cancel_native(self, session: _Session) -> None:
        if session.conn is None or session.native_id is None:
            return
        from acp.schema import CancelNotification

        try:
            await session.conn.send_notification(
                "session/cancel", _dump(CancelNotification(session_id=session.native_id))
            )
        except Exception:
            pass

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        session = self._sessions.get(request.session.session_id)
        if session is not None:
            await self._cancel_native(session)

    async def _teardown(self, session: _Session) -> None:
        with anyio.CancelScope(shield=True):
            for scope in session.scopes:
                scope.cancel()
            session.scopes.clear()
            if session.conn is not None:
                with anyio.move_on_after(2):
                    try:
                        await session.conn.close()
                    except Exception:
                        pass
            # Stopped at once: the agent has saved the session by its last answer (a resume
            # loads it), and some agents (Cline) take a second to exit after stdin closes.
            if session.process is not None:
                await session.process.terminate(0)

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        session = self._sessions.pop(request.session.session_id, None)
        if session is not None:
            await self._teardown(session)
