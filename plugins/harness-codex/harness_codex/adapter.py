"""The Codex adapter: one ``codex app-server`` process per turn, spoken to in JSON-RPC lines.

What it relies on (verified against @openai/codex 0.171.0; the protocol from
``codex app-server generate-ts``):

- a private ``CODEX_HOME`` (and ``HOME``) under the session's ``state_dir`` with a generated
  ``config.toml``: one model provider whose ``base_url`` comes from the session config or the
  injected credentials, ``wire_api = "responses"``, the key named by ``env_key`` (so it lives
  only in the process environment, never on disk), and bounded ``request_max_retries`` /
  ``stream_max_retries``;
- ``TMPDIR`` under ``state_dir`` too: Codex refuses to create its sandbox helper when
  ``CODEX_HOME`` is inside the temporary directory, and its ``workspace-write`` sandbox then
  silently runs no command;
- ``initialize`` -> ``thread/start`` (or ``thread/resume`` of the thread id kept in
  ``state_dir``) with the posture's approval policy and sandbox -> ``turn/start`` (with
  ``outputSchema`` for structured output); the turn ends at ``turn/completed``, when stdin is
  closed and the server exits;
- ``codex exec`` cannot ask the host (``-a`` is rejected there); the app-server's approval
  requests can, so the descriptor claims ``permissions``.

The conversation and its mapping to contract payloads is in :mod:`.stream`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from harness_cli_kit import (
    NativeSession,
    api_key,
    bridge_of,
    check_cli,
    codex_mcp_toml,
    extra_env,
    int_setting,
    safe_id,
)
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_cli_kit.stream import JsonLinesStream
from harness_cli_kit.structured import strict_schema
from harness_hookspecs import (
    ForkSessionRequest,
    HarnessError,
    RewindSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    SteerTurnRequest,
)

from .native import native_codex
from .stream import CodexStream, classify, initialize, parse_stream

NAME = "codex"
BINARY = "codex"
TESTED_CLI = "0.171.0"
KEY_VAR = "HARNESS_CODEX_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "codex-thread.json"
DEFAULT_RETRIES = 1
#: posture -> (approval policy, sandbox mode). ``untrusted``: Codex 0.171 asks before every
#: command (even ``ls``) and before patches; the approval seam answers (strict: the host; auto:
#: the command policy, then the host for ``ask``).
POSTURES = {
    "strict": ("untrusted", "workspace-write"),
    "auto": ("untrusted", "workspace-write"),
    "dangerous": ("never", "danger-full-access"),
}


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def render_config(
    *, base_url: str, model: str | None, retries: int, posture: str, wire_api: str
) -> str:
    # No approval_policy here: Codex 0.171 refuses most values in config.toml ("no longer
    # supported"); thread/start carries it.
    lines = []
    if model:
        lines.append(f"model = {_toml_str(model)}")
    lines += [
        f'model_provider = "{PROVIDER_ID}"',
        f"sandbox_mode = {_toml_str(POSTURES[posture][1])}",
        "check_for_update_on_startup = false",
        "",
        "[history]",
        'persistence = "none"',
        "",
        # A shell snapshot is a file of the shell's environment - the bridge token, the
        # granted credentials - that Codex removes only on a clean exit, and the runtime stops
        # Codex at the turn's end.
        "[features]",
        "shell_snapshot = false",
        "",
        f"[model_providers.{PROVIDER_ID}]",
        'name = "harness_core provider"',
        f"base_url = {_toml_str(base_url)}",
        f"wire_api = {_toml_str(wire_api)}",
        f'env_key = "{KEY_VAR}"',
        f"request_max_retries = {retries}",
        f"stream_max_retries = {retries}",
        "",
    ]
    return "\n".join(lines)


#: Which Codex turn each of our turns was, and a pending thread/fork or thread/revert.
BRANCHES_FILE = "codex-branches.json"


def read_branches(state_dir: str) -> dict[str, Any]:
    try:
        data = json.loads((Path(state_dir) / BRANCHES_FILE).read_text())
    except (OSError, ValueError):
        data = {}
    turns = data.get("turns") if isinstance(data, dict) else None
    return {
        "turns": [list(pair) for pair in turns or [] if isinstance(pair, list) and len(pair) == 2],
        "fork": data.get("fork") if isinstance(data, dict) else None,
        "revert_before": data.get("revert_before") if isinstance(data, dict) else None,
    }


def write_branches(state_dir: str, data: dict[str, Any]) -> None:
    path = Path(state_dir) / BRANCHES_FILE
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(data))
    partial.replace(path)


#: How long a steer waits for the running turn's id (seconds).
STEER_WAIT = 10.0


class CodexAdapter(PerTurnCliAdapter):
    """``codex``: Codex CLI, one ``codex exec`` per turn, resume by thread id."""

    name = NAME
    state_file = STATE_FILE
    state_key = "thread_id"

    display_name = "Codex"
    tested_cli = f"@openai/codex {TESTED_CLI}"
    binary = BINARY
    vendor = "openai"
    # "permissions": codex app-server asks before each command and patch (approval policy
    # untrusted) and the adapter answers through the approval seam.
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
    config_properties = {
        "wire_api": {"enum": ["responses", "chat"]},
        "network_waits": {"type": "integer"},
    }

    details = {
        "wire_api": "openai-responses",
        "protocol": "codex app-server (JSON-RPC lines on stdio), one process per turn",
        "permission_modes": "strict/auto=approval untrusted + workspace-write sandbox, "
        "dangerous=approval never + danger-full-access",
        "approvals": "strict and auto ask the host (auto: the command policy first) via "
        "item/commandExecution|fileChange/requestApproval",
    }

    def __init__(self) -> None:
        super().__init__()
        #: each session's latest turn's conversation (what a steer is written through)
        self.streams: dict[str, CodexStream] = {}

    def _dirs(self, context: SessionContext) -> tuple[Path, Path]:
        state = Path(context.state_dir)
        home, tmp = state / "codex-home", state / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        return home, tmp

    async def check(self, context: SessionContext) -> str:
        self._settings(context)
        home, tmp = self._dirs(context)
        env = {"HOME": str(home), "CODEX_HOME": str(home), "TMPDIR": str(tmp)}
        return await check_cli(context, BINARY, env)

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> dict[str, Any]:
        config = context.config
        base_url = config.get("base_url") or context.env.get("OPENAI_BASE_URL")
        if base_url is None:
            base_url = "https://api.openai.com/v1"
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise HarnessError("invalid-request", "base_url must be an http(s) URL")
        key = api_key(context, "OPENAI_API_KEY")
        wire_api = config.get("wire_api", "responses")
        if wire_api not in ("responses", "chat"):
            raise HarnessError("invalid-request", "wire_api must be responses or chat")
        model = context.model or config.get("model")
        if model is not None and not isinstance(model, str):
            raise HarnessError("invalid-request", "model must be a string")
        return {
            "base_url": base_url,
            "key": key,
            "wire_api": wire_api,
            "model": model,
            "retries": int_setting(config, "max_retries", DEFAULT_RETRIES, 10),
            "network_waits": int_setting(config, "network_waits", 1, 100) or 1,
        }

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        settings = self._settings(context)
        home, tmp = self._dirs(context)
        config = render_config(
            base_url=settings["base_url"],
            model=settings["model"],
            retries=settings["retries"],
            posture=context.posture,
            wire_api=settings["wire_api"],
        )
        bridge = bridge_of(context)
        if bridge is not None:
            config += "\n" + codex_mcp_toml(bridge)
        (home / "config.toml").write_text(config)
        program, wrapper_env = native_codex(session.cli)
        env = {
            **dict(wrapper_env),
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "TMPDIR": str(tmp),
            "PWD": workspace,
            KEY_VAR: settings["key"] or "",
            **extra_env(context.config),
        }
        approval, sandbox = POSTURES[context.posture]
        thread: dict[str, Any] = {"cwd": workspace, "approvalPolicy": approval, "sandbox": sandbox}
        if settings["model"]:
            thread["model"] = settings["model"]
        if context.instructions:  # the host's instructions: developer instructions of the thread
            thread["developerInstructions"] = context.instructions
        stream = CodexStream(
            thread=thread,
            resume=safe_id(session.native_id),
            prompt=prompt,
            approver=context.request_permission,
            network_waits=settings["network_waits"],
        )
        branches = read_branches(context.state_dir)
        if session.native_id is None and branches.get("fork"):
            stream.fork = branches["fork"]
        elif session.native_id is not None and branches.get("revert_before"):
            stream.revert_before = branches["revert_before"]
        self.streams[context.session_id] = stream
        # stdin stays open: the JSON-RPC requests and the approval answers go there.
        return CliTurn([program, "app-server"], env, stream, stdin=initialize())

    def turn_ended(
        self, request: RunTurnRequest, context: SessionContext, stream: JsonLinesStream
    ) -> None:
        """Keep which Codex turn our turn was (fork and rewind name Codex turns), and what
        the turn's thread/fork or thread/revert settled."""
        assert isinstance(stream, CodexStream)
        branches = read_branches(context.state_dir)
        if stream.turn_id is not None:
            branches["turns"].append([request.turn_id, stream.turn_id])
            if stream.fork is not None:
                branches["fork"] = None  # the thread is the fork's own now
        if stream.reverted:
            branches["revert_before"] = None
        write_branches(context.state_dir, branches)

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        """``thread/fork`` of the parent's thread through its last kept turn (``lastTurnId``),
        made by the child's first turn (one app-server process per turn)."""
        parent = request.parent_state_dir
        thread = None
        if parent is not None:
            with contextlib.suppress(HarnessError):
                thread = NativeSession.load(
                    parent, STATE_FILE, key="thread_id", what="no codex state"
                ).native_id
        kept = [turn.turn_id for turn in request.turns]
        known = dict(read_branches(parent)["turns"]) if parent is not None else {}
        if kept and (thread is None or kept[-1] not in known):
            raise HarnessError("invalid-request", "codex has no thread turn to fork at")
        ref = await self.open_session(request.open, context)
        if kept and parent is not None:
            # The parent's thread lives in its own CODEX_HOME: the child's needs its rollout.
            sessions = Path(parent) / "codex-home" / "sessions"
            if sessions.is_dir():
                child_home, _ = self._dirs(context)
                await anyio.to_thread.run_sync(
                    lambda: shutil.copytree(sessions, child_home / "sessions", dirs_exist_ok=True)
                )
            write_branches(
                context.state_dir,
                {
                    "turns": [[ours, known[ours]] for ours in kept if ours in known],
                    "fork": {"thread": thread, "last_turn": known[kept[-1]]},
                    "revert_before": None,
                },
            )
        return ref

    async def rewind_session(self, request: RewindSessionRequest, context: SessionContext) -> None:
        """``thread/revert`` before the first Codex turn the rewind drops, made by the
        session's next turn (its app-server resumes the thread, reverts, then starts)."""
        branches = read_branches(context.state_dir)
        kept = {turn.turn_id for turn in request.turns}
        turns = branches["turns"]
        first = next((i for i, (ours, _) in enumerate(turns) if ours not in kept), None)
        if first is None:
            return  # nothing after the point: the thread already is the conversation
        branches["revert_before"] = turns[first][1]
        branches["turns"] = turns[:first]
        write_branches(context.state_dir, branches)

    async def steer_turn(self, request: SteerTurnRequest, context: SessionContext) -> None:
        """``turn/steer`` on the running turn's app-server (waiting a moment for the turn's
        id when the steer comes right after the turn started)."""
        session_id = request.session.session_id
        with anyio.move_on_after(STEER_WAIT):
            while True:
                process = self.running.get(session_id)
                stream = self.streams.get(session_id)
                if process is not None and process.returncode is not None:
                    break  # the turn's app-server is gone
                line = stream.steer_line(request.text) if stream is not None else None
                if process is not None and line is not None:
                    await process.send(line)
                    return
                await anyio.sleep(0.05)
        raise HarnessError("turn-not-found", "no codex turn is running in this session")

    def structured(self, turn: CliTurn, schema: dict[str, Any], context: SessionContext) -> None:
        """``turn/start``'s ``outputSchema``: sent as the Responses API's strict
        ``json_schema`` text format (Codex does not validate, the runtime does). The schema is
        made strict-compatible first; the answer's nulls for optional properties are dropped
        again."""
        assert isinstance(turn.stream, CodexStream)
        turn.stream.wire_schema = strict_schema(schema)
        turn.stream.output_schema = schema


__all__ = ["CodexAdapter", "CodexStream", "classify", "parse_stream", "render_config"]
