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
  unreachable endpoint for minutes); an ``api_retry`` notice for a 401/403 ends the turn at once;
- fork and conversation rewind: ``--resume OTHER --fork-session --session-id OURS
  --resume-session-at UUID`` writes a new transcript under our id holding ``OTHER``'s
  conversation up to the message ``UUID`` (message uuids are kept). Each turn's last assistant
  message uuid is kept in ``claude-branches.json``; a fork copies the parent's transcript into
  the child's config dir under a fresh name; a rewind's next turn first moves its own
  transcript aside under a fresh name (recorded before the move) and forks it back.

The stream's mapping to contract payloads is in :mod:`.stream`.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from harness_cli_kit import (
    Branches,
    NativeSession,
    api_key,
    base_url,
    bridge_of,
    check_cli,
    claude_mcp_config,
    extra_env,
    int_setting,
    safe_prompt,
)
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_cli_kit.stream import JsonLinesStream
from harness_hookspecs import (
    ForkSessionRequest,
    HarnessError,
    ResumeSessionRequest,
    RewindSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    SteerTurnRequest,
)

from .stream import ClaudeStream, classify_result, hooks_initialize, parse_stream

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
DETAILS = {
    "wire_api": "anthropic-messages",
    "permission_modes": "strict=default, auto=acceptEdits+allowedTools, "
    "dangerous=bypassPermissions (acceptEdits+all tools as root)",
    "approvals": "strict and auto ask the host: through the session's MCP bridge "
    "(--permission-prompt-tool mcp__<bridge>__approve_tool_call) when it has host tools, "
    "else --permission-prompt-tool stdio",
    "fork": "at any turn's end: --resume --fork-session --resume-session-at",
    "rewind": "the conversation too: the next turn forks its own transcript back to the "
    "last kept turn",
}
#: Each turn's last assistant message uuid, and the fork the next turn makes.
BRANCHES_FILE = "claude-branches.json"
#: ``permission_prompt`` config values: ``auto`` (the bridge when the session has one, else
#: stdio) or ``stdio`` (always the stdio control protocol).
PROMPT_CHANNELS = ("auto", "stdio")
#: Tools whose input names a path. Where the runtime is asked (``strict``, ``auto``) they are
#: not pre-allowed: Claude Code then allows on its own only what it allows in the working
#: directory (reads there, ``acceptEdits``' edits there) and asks for the rest, so a
#: ``Read`` of ``~/.ssh/id_rsa`` or an edit outside the workspace reaches the command policy's
#: path rules, as its ``cat`` does.
PATH_TOOLS = ("Edit", "Write", "Read", "Glob", "Grep", "NotebookEdit")
#: ``dangerous`` when ``bypassPermissions`` is refused (root): every built-in tool allowed.
ALL_TOOLS = (*AUTO_TOOLS, "WebFetch", "WebSearch")


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
    if asks_host(posture):
        # Shell commands go through the approval seam (the command policy reads them), and so
        # do file tools beyond the working directory (a host's own allowed_tools is kept).
        held = ("Bash", *PATH_TOOLS) if allowed is None else ("Bash",)
        tools = [tool for tool in tools if tool not in held]
    args = ["--permission-mode", "acceptEdits"]
    if tools:
        args += ["--allowedTools", ",".join(tools)]
    return args, "acceptEdits"


def prompt_channel(config: Mapping[str, Any]) -> str:
    value = config.get("permission_prompt", "auto")
    if value not in PROMPT_CHANNELS:
        raise HarnessError("invalid-request", "permission_prompt must be auto or stdio")
    return str(value)


#: Seconds Claude Code gives the after_tool hook callback: past the runtime's own bound on
#: waiting for the host's hooks (``harness_core.tool_hooks.CONTEXT_WAIT``), so the runtime's
#: answer (with what is in) always arrives first.
HOOK_TIMEOUT = 60


def asks_host(posture: str) -> bool:
    """Whether a turn asks the runtime (``--permission-prompt-tool stdio``): every posture but
    ``dangerous``, which allows without asking."""
    return posture != "dangerous"


def user_message(prompt: str) -> bytes:
    """The prompt as the ``--input-format stream-json`` user message line."""
    message = {"type": "user", "message": {"role": "user", "content": prompt}}
    return json.dumps(message).encode() + b"\n"


def transcript_of(config_dir: Path, session_id: str) -> Path | None:
    """The CLI's transcript of ``session_id`` (``projects/<cwd>/<id>.jsonl``), if any."""
    projects = config_dir / "projects"
    found = sorted(projects.glob(f"*/{session_id}.jsonl")) if projects.is_dir() else []
    return found[0] if found else None


def transcript_exists(config_dir: Path, session_id: str) -> bool:
    return transcript_of(config_dir, session_id) is not None


class ClaudeCodeAdapter(PerTurnCliAdapter):
    """``claude-code``: Claude Code CLI, one process per turn, resume by session id (the
    controller's id is the CLI's: its transcript in the private config dir tells a resume)."""

    name = NAME
    state_file = "claude-session.json"
    display_name = "Claude Code"
    tested_cli = f"@anthropic-ai/claude-code {TESTED_CLI}"
    binary = BINARY
    vendor = "anthropic"
    features = (
        "resume",
        "cancel",
        "usage",
        "permissions",
        "structured-output",
        "mcp",
        "steer",
        "fork",
        "checkpoint",
        "instructions",
    )

    def __init__(self) -> None:
        super().__init__()
        #: whether each session's latest turn reads stream-json input (can be steered)
        self.steerable: dict[str, bool] = {}

    details = DETAILS
    config_properties = {
        "allowed_tools": {"type": "array", "items": {"type": "string"}},
        "permission_prompt": {"enum": list(PROMPT_CHANNELS)},
    }

    def _home(self, context: SessionContext) -> Path:
        home = Path(context.state_dir) / "home"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        return home

    async def check(self, context: SessionContext) -> str:
        permission_args(context.posture, context.config)
        prompt_channel(context.config)
        return await check_cli(context, BINARY, {"HOME": str(self._home(context))})

    def saved(self, request: ResumeSessionRequest, context: SessionContext) -> NativeSession:
        session_id = request.session.session_id
        pending = Branches.load(context.state_dir, BRANCHES_FILE).pending
        if pending is None and not transcript_exists(self._home(context) / ".claude", session_id):
            raise HarnessError("session-not-found", "no claude transcript for this session")
        return NativeSession(context.state_dir, self.state_file, native_id=session_id)

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

    def _mcp_args(self, context: SessionContext, perms: list[str]) -> list[str]:
        """Permission flags, plus the host tools' bridge when the session has one: only that
        server (``--strict-mcp-config``), its tools allowed (they are read-only)."""
        bridge = bridge_of(context)
        if bridge is None:
            return perms
        path = Path(context.state_dir) / "mcp.json"
        path.write_text(json.dumps(claude_mcp_config(bridge)))
        allowed = "mcp__" + bridge.name
        perms = list(perms)
        if "--allowedTools" in perms:
            at = perms.index("--allowedTools") + 1
            perms[at] = f"{perms[at]},{allowed}"
        elif "bypassPermissions" not in perms:
            perms += ["--allowedTools", allowed]
        return [*perms, "--strict-mcp-config", "--mcp-config", str(path)]

    def _bridge_prompt_tool(self, context: SessionContext, stream: ClaudeStream) -> str | None:
        """``mcp__<bridge>__<tool>`` when this turn's approvals go through the session's bridge
        (it has host tools and ``permission_prompt`` is ``auto``); None: use stdio."""
        bridge = bridge_of(context)
        serve = getattr(context, "serve_bridge_approvals", None)
        if bridge is None or serve is None or prompt_channel(context.config) != "auto":
            return None
        tool = serve(stream.answer_prompt_tool)
        return f"mcp__{bridge.name}__{tool}" if isinstance(tool, str) else None

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        session_id = context.session_id
        home = self._home(context)
        perms, _mode = permission_args(context.posture, context.config)
        argv = [session.cli, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--include-partial-messages"]
        argv += self._mcp_args(context, perms)
        asking = asks_host(context.posture)
        stream = ClaudeStream(
            expected=session_id, approver=context.request_permission if asking else None
        )
        prompt_tool = self._bridge_prompt_tool(context, stream) if asking else None
        stream.stdio = asking and prompt_tool is None
        if getattr(context, "wants_after_tool_context", False):
            # The host's after_tool hooks add context: a PostToolUse hook callback per tool
            # call, answered on stdin with their text (the Agent SDKs' in-process hooks).
            stream.tool_context = context.after_tool_context  # type: ignore[attr-defined]
        streaming = stream.reads_stdin
        # A turn reading stream-json on stdin can take the host's steer there (see steer_turn).
        self.steerable[session_id] = streaming
        if prompt_tool is not None:
            # Claude calls the bridge's permission-prompt tool for each approval; the bridge
            # hands the call to the stream, which asks the approval seam.
            argv += ["--permission-prompt-tool", prompt_tool]
        elif stream.stdio:
            # Claude asks on stdout (control_request can_use_tool) and reads the answer on
            # stdin, where the prompt goes too (the Agent SDKs' protocol).
            argv += ["--permission-prompt-tool", "stdio"]
        if streaming:
            argv += ["--input-format", "stream-json"]
        model = context.model or context.config.get("model")
        if isinstance(model, str) and model:
            argv += ["--model", model]
        if context.instructions:  # the host's instructions, appended to the system prompt
            argv += ["--append-system-prompt", context.instructions]
        argv += self._session_args(context, home / ".claude")
        if not streaming:
            argv += ["--", safe_prompt(prompt)]
        stdin = None
        if streaming:
            hooks = hooks_initialize(HOOK_TIMEOUT) if stream.tool_context else b""
            stdin = hooks + user_message(prompt)
        # `claude -p` has no in-band cancel: the runtime kills the turn's process group.
        return CliTurn(argv, self._env(context, home), stream, stdin=stdin)

    def _session_args(self, context: SessionContext, config_dir: Path) -> list[str]:
        """``--resume`` of the session's transcript, or ``--session-id`` for a new one; with
        a pending branch, a fork of the transcript set aside (the session's own one, moved
        aside first, for a rewind; a copy of the parent's for a fork's child) back into the
        session's id, up to the kept message."""
        session_id = context.session_id
        own = transcript_of(config_dir, session_id)
        branches = Branches.load(context.state_dir, BRANCHES_FILE)
        pending = branches.pending
        if pending is None:
            return ["--resume", session_id] if own is not None else ["--session-id", session_id]
        if own is not None:  # a rewind: ours goes aside, under a name recorded before the move
            pending["aside"] = str(uuid.uuid4())
            branches.save()
            own.replace(own.with_name(f"{pending['aside']}.jsonl"))
        aside, at = pending.get("aside"), pending.get("at")
        if not aside or not at:
            return ["--session-id", session_id]  # nothing of the conversation is kept
        return [
            *("--resume", str(aside), "--fork-session", "--session-id", session_id),
            *("--resume-session-at", str(at)),
        ]

    def turn_ended(
        self, request: RunTurnRequest, context: SessionContext, stream: JsonLinesStream
    ) -> None:
        """Keep the turn's last assistant message uuid (where a fork or rewind resumes), and
        that its branch was made (the session's own transcript exists again)."""
        assert isinstance(stream, ClaudeStream)
        branches = Branches.load(context.state_dir, BRANCHES_FILE)
        config_dir = self._home(context) / ".claude"
        if branches.pending is not None and transcript_exists(config_dir, context.session_id):
            branches.pending = None
        if stream.last_uuid is not None:
            branches.add(request.turn_id, stream.last_uuid)
        branches.save()

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        """A child whose first turn forks a copy of the parent's transcript at the parent's
        last kept turn (``--resume-session-at``)."""
        ref = await self.open_session(request.open, context)
        carried = Branches.of_parent(request, BRANCHES_FILE)
        if carried is None:
            return ref  # nothing of a claude conversation to carry
        parent, marks, kept = carried
        source = transcript_of(Path(parent) / "home" / ".claude", request.parent.session_id)
        if source is None:
            raise HarnessError("invalid-request", "claude has no transcript to fork")
        aside = str(uuid.uuid4())
        projects = self._home(context) / ".claude" / "projects" / source.parent.name
        projects.mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(shutil.copyfile, source, projects / f"{aside}.jsonl")
        marks.save_child(context.state_dir, kept, {"aside": aside, "at": marks.last_kept(kept)})
        return ref

    async def rewind_session(self, request: RewindSessionRequest, context: SessionContext) -> None:
        """The next turn forks the session's transcript back to its last kept turn."""
        kept = [turn.turn_id for turn in request.turns]
        Branches.rewound(
            context.state_dir, BRANCHES_FILE, kept, lambda marks: {"at": marks.last_kept(kept)}
        )

    async def steer_turn(self, request: SteerTurnRequest, context: SessionContext) -> None:
        """A user message written on the running turn's ``--input-format stream-json`` stdin,
        as the Agent SDKs stream input: Claude Code reads it before its next model request.
        A turn without stream-json input (the ``dangerous`` posture, or approvals through the
        bridge's prompt tool) cannot be steered: ``unsupported-feature``."""
        session_id = request.session.session_id
        process = self.running.get(session_id)
        if process is None or process.returncode is not None:
            raise HarnessError("turn-not-found", "no claude turn is running in this session")
        if not self.steerable.get(session_id):
            raise HarnessError(
                "unsupported-feature", "this claude-code turn reads no stream-json input to steer"
            )
        await process.send(user_message(request.text))

    def structured(self, turn: CliTurn, schema: dict[str, Any], context: SessionContext) -> None:
        """``--json-schema``: the CLI adds its ``StructuredOutput`` tool, validates and retries
        itself; the result line carries ``structured_output``."""
        turn.add_options("--json-schema", json.dumps(schema, separators=(",", ":")))
        assert isinstance(turn.stream, ClaudeStream)
        turn.stream.structured = True


__all__ = ["ClaudeCodeAdapter", "ClaudeStream", "classify_result", "parse_stream"]
