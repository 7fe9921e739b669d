"""The Claude Code adapter: one ``claude -p --output-format stream-json`` process per turn.

What it relies on (verified against @anthropic-ai/claude-code 2.1.332, see ``docs/cli-streams.md``):

- a private ``HOME`` and ``CLAUDE_CONFIG_DIR`` under the session's ``state_dir`` (the CLI keeps its
  session transcripts there, so resume needs the same directory, and nothing of the host's
  ``~/.claude`` is read);
- ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` built from the session config and the injected
  credentials (``context.env``), never from the host environment;
- ``--session-id`` = the controller's proposed session id on the first turn, ``--resume`` after
  (the CLI's transcript file tells which), so the contract's session id *is* the CLI's;
- ``--include-partial-messages`` for text deltas; whole messages, tool calls and results, the
  ``system/permission_denied`` notices and the final ``result`` line (usage and cost) as well;
- ``CLAUDE_CODE_MAX_RETRIES`` bounds the CLI's own retries (its default retries a 401 or an
  unreachable endpoint for minutes); an ``api_retry`` notice for a 401/403 ends the turn at once.

Failures are classified from the stream, never forwarded: the CLI's error text stays here.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from harness_cli_kit import (
    JsonLinesStream,
    api_key,
    base_url,
    check_cli,
    cli_details,
    count,
    extra_env,
    int_setting,
    require_workspace,
    safe_id,
    safe_prompt,
)
from harness_cli_kit import safe_name as tool_name
from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    OpenSessionRequest,
    Payload,
    PermissionRequested,
    PermissionResolved,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
    assert_supported,
)

NAME = "claude-code"
BINARY = "claude"
TESTED_CLI = "2.1.332"
DEFAULT_MAX_RETRIES = 2
#: Tools allowed without a prompt under the ``auto`` posture (``acceptEdits`` covers file edits).
AUTO_TOOLS = (
    "Bash",
    "Edit",
    "Write",
    "Read",
    "Glob",
    "Grep",
    "NotebookEdit",
    "TodoWrite",
    "Task",
    "Agent",
)
#: ``dangerous`` when ``bypassPermissions`` is refused (root): every built-in tool allowed.
ALL_TOOLS = (*AUTO_TOOLS, "WebFetch", "WebSearch")

#: Adapter-authored summaries per Claude Code tool (never the tool's input or output).
TOOL_SUMMARIES = {
    "Bash": "ran a shell command",
    "Write": "wrote a file",
    "Edit": "edited a file",
    "MultiEdit": "edited a file",
    "NotebookEdit": "edited a notebook",
    "Read": "read a file",
    "Glob": "listed files",
    "Grep": "searched files",
    "LS": "listed a directory",
    "WebFetch": "fetched a web page",
    "WebSearch": "searched the web",
    "TodoWrite": "updated the todo list",
    "Task": "ran a sub-agent task",
    "Agent": "ran a sub-agent task",
    "Skill": "used a skill",
    "ToolSearch": "searched the tool list",
}
#: Connection failures before any byte (the endpoint is down), as opposed to a dropped stream.
_UNREACHABLE = re.compile(
    r"ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|Connection refused|"
    r"Unable to connect|ETIMEDOUT|timed out|Request timed out",
    re.I,
)


def tool_summary(name: str) -> str:
    if name.startswith("mcp__"):
        return "called an MCP tool"
    return TOOL_SUMMARIES.get(name, "used a tool")


def classify_result(result: Mapping[str, Any]) -> str:
    """Map an ``is_error`` result line to a fixed reason (its text is read here, never sent)."""
    status = result.get("api_error_status")
    text = result.get("result") if isinstance(result.get("result"), str) else ""
    if status in (401, 403) or re.search(r"authenticat|invalid api key|401", text or "", re.I):
        return "authentication-required"
    if isinstance(status, int) and (status in (408, 429, 529) or 500 <= status < 600):
        return "provider-unavailable"
    if status is None and _UNREACHABLE.search(text or ""):
        return "provider-unavailable"
    return "provider-failed"


class ClaudeStream(JsonLinesStream):
    """Turns ``claude -p --output-format stream-json --verbose`` lines into payloads (pure)."""

    cli = "claude"

    def __init__(self) -> None:
        super().__init__()
        self.session_id: str | None = None
        self.result: dict[str, Any] | None = None
        self._streamed_blocks: set[tuple[str, int]] = set()
        self._message_id: str | None = None
        self._messages: set[str] = set()
        self._tools: dict[str, str] = {}
        self._completed: set[str] = set()
        self._denied: set[str] = set()

    def event(self, data: dict[str, Any]) -> list[Payload]:
        sid = data.get("session_id")
        if isinstance(sid, str) and sid and self.session_id is None:
            self.session_id = sid
        kind = data.get("type")
        main = data.get("parent_tool_use_id") is None
        if kind == "stream_event" and main:
            return self._stream_event(data.get("event"))
        if kind == "assistant":
            return self._assistant(data.get("message"), main)
        if kind == "user":
            return self._user(data.get("message"))
        if kind == "system":
            return self._system(data)
        if kind == "result":
            self.result = data
        return []

    def _stream_event(self, event: Any) -> list[Payload]:
        if not isinstance(event, Mapping):
            return []
        etype = event.get("type")
        if etype == "message_start":
            message = event.get("message")
            mid = message.get("id") if isinstance(message, Mapping) else None
            self._message_id = mid if isinstance(mid, str) else None
        elif etype == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("type") == "text_delta":
                text = delta.get("text")
                index = event.get("index")
                if isinstance(text, str) and text:
                    if self._message_id is not None and isinstance(index, int):
                        self._streamed_blocks.add((self._message_id, index))
                    return [MessageDelta(text=text)]
        return []

    def _assistant(self, message: Any, main: bool) -> list[Payload]:
        if not isinstance(message, Mapping):
            return []
        if message.get("model") == "<synthetic>":
            # The CLI's own error notice (carries raw provider text): classified from `result`.
            return []
        mid = message.get("id")
        if isinstance(mid, str):
            self._messages.add(mid)
        out: list[Payload] = []
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping):
                continue
            btype = block.get("type")
            if btype == "text" and main:
                text = block.get("text")
                if isinstance(text, str) and text:
                    self.last_text = text
                    out.append(MessageCompleted(text=text))
            elif btype == "tool_use":
                call_id = safe_id(block.get("id"))
                if call_id is None or call_id in self._tools:
                    continue
                name = tool_name(block.get("name"))
                self._tools[call_id] = name
                out.append(ToolStarted(call_id=call_id, name=name, summary=tool_summary(name)))
        return out

    def _user(self, message: Any) -> list[Payload]:
        if not isinstance(message, Mapping):
            return []
        content = message.get("content")
        out: list[Payload] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            call_id = safe_id(block.get("tool_use_id"))
            if call_id is None or call_id in self._completed:
                continue
            self._completed.add(call_id)
            name = self._tools.get(call_id, "tool")
            if call_id in self._denied:
                summary = "the tool call was denied by the permission policy"
                ok = False
            elif block.get("is_error"):
                summary, ok = "the tool call failed", False
            else:
                summary, ok = tool_summary(name), True
            out.append(ToolCompleted(call_id=call_id, name=name, ok=ok, summary=summary))
        return out

    def _system(self, data: Mapping[str, Any]) -> list[Payload]:
        subtype = data.get("subtype")
        if subtype == "init":
            return [Status(message="claude code session started")]
        if subtype == "permission_denied":
            call_id = safe_id(data.get("tool_use_id"))
            if call_id is None or call_id in self._denied:
                return []
            self._denied.add(call_id)
            name = tool_name(data.get("tool_name") or self._tools.get(call_id))
            return [
                PermissionRequested(
                    request_id=call_id, summary=f"{name} needs permission", tool=name
                ),
                PermissionResolved(request_id=call_id, decision="deny", source="policy"),
            ]
        if subtype == "api_retry":
            status = data.get("error_status")
            if status in (401, 403):
                # The CLI would retry a rejected key; it will not get better. End now.
                self.failure = "authentication-required"
                return []
            return [Status(message="retrying the model request")]
        return []

    def usage(self) -> UsageReported | None:
        result = self.result
        if not isinstance(result, Mapping):
            return None
        usage = result.get("usage")
        if not isinstance(usage, Mapping):
            return None
        cost = result.get("total_cost_usd")
        cost_ok = isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
        fields = {
            "input_tokens": count(usage.get("input_tokens")),
            "output_tokens": count(usage.get("output_tokens")),
            "cache_read_tokens": count(usage.get("cache_read_input_tokens")),
            "cache_write_tokens": count(usage.get("cache_creation_input_tokens")),
        }
        if all(v is None for v in fields.values()):
            return None
        return UsageReported(
            usage=Usage(
                **fields,
                requests=len(self._messages) or None,
                cost_usd=round(float(cost), 10) if cost_ok and cost == cost else None,
            )
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        result = self.result
        if result is None:
            return self.unfinished("ended without a result")
        if result.get("is_error") or result.get("subtype") not in (None, "success"):
            return self.failed(classify_result(result))
        return self.exit_failure(exit_code) or TurnCompleted(text=self.last_text)


parse_stream = ClaudeStream.parse


def permission_args(posture: str, config: Mapping[str, Any]) -> tuple[list[str], str]:
    """Map a posture to Claude Code permission flags; returns (argv, mode actually used)."""
    allowed = config.get("allowed_tools")
    if allowed is not None and (
        not isinstance(allowed, list | tuple) or not all(isinstance(t, str) for t in allowed)
    ):
        raise HarnessError("invalid-request", "allowed_tools must be a list of tool names")
    if posture == "strict":
        # Anything that needs approval is denied in print mode (reported as permission events).
        args = ["--permission-mode", "default"]
        if allowed:
            args += ["--allowedTools", ",".join(allowed)]
        return args, "default"
    if posture == "dangerous":
        if hasattr(os, "geteuid") and os.geteuid() != 0:
            return ["--permission-mode", "bypassPermissions"], "bypassPermissions"
        # Claude Code refuses bypassPermissions as root: allow every built-in tool instead.
        tools = list(allowed) if allowed else list(ALL_TOOLS)
        return [
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            ",".join(tools),
        ], "acceptEdits"
    tools = list(allowed) if allowed is not None else list(AUTO_TOOLS)
    args = ["--permission-mode", "acceptEdits"]
    if tools:
        args += ["--allowedTools", ",".join(tools)]
    return args, "acceptEdits"


def transcript_exists(config_dir: Path, session_id: str) -> bool:
    projects = config_dir / "projects"
    return projects.is_dir() and any(projects.glob(f"*/{session_id}.jsonl"))


class ClaudeCodeAdapter:
    """``claude-code``: Claude Code CLI, one process per turn, resume by session id."""

    name = NAME

    def __init__(self) -> None:
        self._sessions: dict[str, str] = {}
        self._descriptor: HarnessDescriptor | None = None

    def describe(self) -> HarnessDescriptor:
        if self._descriptor is None:
            details = cli_details(BINARY, f"@anthropic-ai/claude-code {TESTED_CLI}")
            details["wire_api"] = "anthropic-messages"
            details["permission_modes"] = (
                "strict=default, auto=acceptEdits+allowedTools, "
                "dangerous=bypassPermissions (acceptEdits+all tools as root)"
            )
            self._descriptor = HarnessDescriptor(
                provider=NAME,
                targets=["local"],
                features=["resume", "cancel", "usage", "permissions"],
                version="0.1.0",
                vendor="anthropic",
                display_name="Claude Code",
                details=details,
            )
        return self._descriptor

    # -- sessions ---------------------------------------------------------------------------

    async def _check_cli(self, context: SessionContext) -> str:
        path = await check_cli(context, BINARY, {"HOME": str(self._home(context))})
        self._sessions[context.session_id] = path
        return path

    def _home(self, context: SessionContext) -> Path:
        home = Path(context.state_dir) / "home"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        return home

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        permission_args(context.posture, context.config)
        await self._check_cli(context)
        return SessionRef(provider=NAME, target=request.target, session_id=context.session_id)

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        home = self._home(context)
        if not transcript_exists(home / ".claude", request.session.session_id):
            raise HarnessError("session-not-found", "no claude transcript for this session")
        await self._check_cli(context)
        return request.session

    # -- turn -------------------------------------------------------------------------------

    def _env(self, context: SessionContext, home: Path) -> dict[str, str]:
        url = base_url(context, "ANTHROPIC_BASE_URL")
        key = api_key(context, "ANTHROPIC_API_KEY")
        retries = int_setting(context.config, "max_retries", DEFAULT_MAX_RETRIES, 10)
        env = {
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(retries),
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "PWD": context.workspace or str(home),
        }
        if key:
            env["ANTHROPIC_API_KEY"] = key
        if url:
            env["ANTHROPIC_BASE_URL"] = url.rstrip("/").removesuffix("/v1")
        return {**env, **extra_env(context.config)}

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session_id = request.session.session_id
        path = self._sessions.get(session_id)
        if path is None:
            raise HarnessError("session-not-found")
        workspace = require_workspace(context, NAME)
        home = self._home(context)
        env = self._env(context, home)
        perms, _mode = permission_args(context.posture, context.config)
        argv = [path, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--include-partial-messages", *perms]
        model = context.model or context.config.get("model")
        if isinstance(model, str) and model:
            argv += ["--model", model]
        if transcript_exists(home / ".claude", session_id):
            argv += ["--resume", session_id]
        else:
            argv += ["--session-id", session_id]
        argv += ["--", safe_prompt(request.prompt)]
        process = await context.spawn(argv, env=env, cwd=workspace)
        stream = ClaudeStream()
        async for payload in stream.relay(process):
            yield payload
        if stream.session_id is not None and stream.session_id != session_id:
            yield TurnFailed(reason="provider-failed", hint="claude answered for another session")
            return
        for payload in stream.ending(stream.exit_code):
            yield payload

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # `claude -p` has no in-band cancel: the runtime kills the turn's process group.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)


__all__ = ["ClaudeCodeAdapter", "ClaudeStream", "classify_result", "parse_stream"]
