"""The OpenCode adapter: one ``opencode serve`` process per turn, driven over HTTP.

What it relies on (verified against opencode-ai 1.18.33, see ``docs/cli-streams.md`` and the
server's ``/doc`` OpenAPI document):

- a private HOME and XDG dirs under the session's ``state_dir`` (sessions live in the data dir, so
  resume needs the same dirs) and a generated config file given by ``OPENCODE_CONFIG``;
- ``--dir WORKSPACE`` *and* ``PWD=WORKSPACE`` (a Bun binary: it takes its cwd from ``$PWD``);
- an OpenAI-compatible provider whose ``apiKey`` is ``{env:HARNESS_OPENCODE_API_KEY}``, so the key
  only ever lives in the process environment (never in a file);
- the first turn creates the OpenCode session with a title (no title-generation side request);
  its ``ses_...`` id is kept in ``state_dir`` and later turns (in any process) prompt it again;
- ``permission`` rules ``ask`` for shell, edits, fetches and paths outside the workspace unless
  the posture is ``dangerous``: every ``permission.asked`` is answered through the runtime's
  approval seam (:mod:`.turn`);
- a turn with an output schema posts ``format: {"type": "json_schema", ...}``: OpenCode adds a
  ``StructuredOutput`` tool and returns the call's input as the reply's ``info.structured``
  (not validated: the runtime does);
- steer: ``POST /session/{id}/prompt_async`` while the turn's prompt runs (the running loop
  reads the new user message before its next model request);
- fork and conversation rewind through ``POST /session/{id}/fork`` (a new session holding the
  messages before a message): each turn's user message index is kept in
  ``opencode-branches.json``; a fork copies the parent's data directory into the child's and
  the child's first turn forks the parent's session before the first dropped turn's message;
  a rewind's next turn forks its own session so and goes on in the new one (not ``/revert``:
  that also rewrites the workspace from OpenCode's own snapshots, the runtime's job here).

OpenCode takes ~70 s to give up on an unreachable endpoint and has no retry knob, so the adapter
probes the endpoint (TCP connect, bounded) before spawning and fails ``provider-unavailable`` at
once; anything later is bounded by the controller's deadline.
"""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from harness_cli_kit import (
    COMMAND_PROPERTY,
    Branches,
    NativeSession,
    api_key,
    base_url,
    bridge_of,
    command_of,
    extra_env,
    located_command,
    opencode_mcp,
    preflight,
    require_workspace,
)
from harness_cli_kit.lifecycle import PerTurnCliAdapter
from harness_hookspecs import (
    TERMINAL_TYPES,
    ForkSessionRequest,
    HarnessError,
    Payload,
    RewindSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    Status,
    SteerTurnRequest,
)

from .events import ServeEvents, classify, parse_events
from .turn import VENDOR, ServeTurn

TESTED_CLI = "1.18.33"
KEY_VAR = "HARNESS_OPENCODE_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "opencode-session.json"
#: How long a steer waits for the running turn's prompt to be posted (seconds): the server's
#: start and the session's creation come first.
STEER_WAIT = 60.0
#: Each turn's user message index, and the fork the next turn makes.
BRANCHES_FILE = "opencode-branches.json"
#: OpenCode's data directory under a session's home (its sessions' store).
DATA_DIR = Path(".local", "share", "opencode")
#: The permissions that ask (OpenCode's ``edit`` covers write, edit and patch); reads inside
#: the workspace run without asking, as in Claude Code's default mode.
ASKING = ("bash", "edit", "webfetch", "external_directory")


def permission_rules(posture: str) -> dict[str, str]:
    """OpenCode's ``permission`` config for a posture: ``dangerous`` allows everything, the
    others ask (the runtime answers: ``auto`` by its command policy, ``strict`` by the host).
    The ``question`` tool is off: nobody would answer it."""
    action = "allow" if posture == "dangerous" else "ask"
    return {**dict.fromkeys(ASKING, action), "question": "deny"}


def message_body(
    prompt: str, model: str, schema: Mapping[str, Any] | None, instructions: str | None = None
) -> dict[str, Any]:
    """The ``POST /session/{id}/message`` body: the prompt, the model, the schema if any, the
    host's instructions (``system``: added to the system prompt of this message's loop)."""
    provider, _, model_id = model.partition("/")
    body: dict[str, Any] = {
        "parts": [{"type": "text", "text": prompt}],
        "model": {"providerID": provider, "modelID": model_id},
    }
    if instructions:
        body["system"] = instructions
    if schema is not None:
        body["format"] = {"type": "json_schema", "schema": dict(schema)}
    return body


class OpenCodeAdapter(PerTurnCliAdapter):
    """``opencode``: OpenCode, one ``opencode serve`` per turn, resume by native session id."""

    name = "opencode"
    state_file = STATE_FILE
    command_name = "opencode"
    #: its key comes as OPENAI_API_KEY (credentials-env's vendor fallback for openai)
    vendor = VENDOR

    display_name = "OpenCode"
    tested_cli = f"opencode-ai {TESTED_CLI}"
    details = {
        "wire_api": "chat-completions",
        "approvals": "strict and auto ask the host: opencode serve's permission.asked",
        "structured_output": "format json_schema (the StructuredOutput tool)",
        "fork": "at any turn's end: POST /session/{id}/fork before the next turn's message",
        "rewind": "the conversation too: the next turn forks its session before the first "
        "dropped turn's message",
    }
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
        #: each session's running turn (what a steer posts through)
        self.turns: dict[str, ServeTurn] = {}

    config_properties = {"command": COMMAND_PROPERTY, "provider_package": {"type": "string"}}

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str]:
        url = base_url(context, "OPENAI_BASE_URL")
        key = api_key(context, "OPENAI_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError(
                "invalid-request",
                "opencode needs a model: --model PROVIDER/MODEL (e.g. --model "
                "openai/gpt-4.1-mini), the session's model, or config model",
            )
        return url, key, model

    def _write_config(
        self, context: SessionContext, home: Path, base_url: str | None, model: str
    ) -> tuple[Path, str]:
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "permission": permission_rules(context.posture),
        }
        if base_url:
            model_id = model.split("/", 1)[1] if model.startswith(PROVIDER_ID + "/") else model
            config["provider"] = {
                PROVIDER_ID: {
                    "npm": str(context.config.get("provider_package", "@ai-sdk/openai-compatible")),
                    "name": "harness_core provider",
                    "options": {"baseURL": base_url, "apiKey": "{env:" + KEY_VAR + "}"},
                    "models": {model_id: {"name": model_id}},
                }
            }
            full = f"{PROVIDER_ID}/{model_id}"
        else:
            if "/" not in model:
                raise HarnessError(
                    "invalid-request", "without base_url the model must be provider/model"
                )
            full = model
        config["model"] = full
        config["small_model"] = full
        bridge = bridge_of(context)
        if bridge is not None:
            config["mcp"] = opencode_mcp(bridge)
        path = home / "opencode.json"
        path.write_text(json.dumps(config, indent=2))
        return path, full

    def _env(
        self, context: SessionContext, home: Path, config_path: Path, key: str | None
    ) -> dict[str, str]:
        workspace = context.workspace or str(home)
        env = {
            "HOME": str(home),
            "PWD": workspace,
            "OPENCODE_CONFIG": str(config_path),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            KEY_VAR: key or "",
        }
        return {**env, **extra_env(context.config)}

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.of(request.session)
        workspace = require_workspace(context, self.name)
        url, key, model = self._settings(context)
        home = Path(context.state_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        config_path, full_model = self._write_config(context, home, url, model)
        unreachable = await preflight(context, url)
        if unreachable is not None:
            yield unreachable
            return
        # The server's password keeps other local users out; it lives in its environment only.
        password = secrets.token_urlsafe(24)
        context.add_secret(password)
        env = {**self._env(context, home, config_path, key), "OPENCODE_SERVER_PASSWORD": password}
        argv = [*located_command(context.config, self.name), "serve"]
        argv += ["--hostname", "127.0.0.1", "--port", "0"]
        process = await context.spawn(argv, env=env, cwd=workspace)
        yield Status(message="opencode started")
        turn = ServeTurn(
            context,
            process,
            password,
            workspace,
            session,
            message_body(request.prompt, full_model, request.output_schema, context.instructions),
            structured=request.output_schema is not None,
        )
        branches = Branches.load(context.state_dir, BRANCHES_FILE)
        turn.branch = branches.pending
        self.turns[context.session_id] = turn
        try:
            async for payload in turn.run():
                if payload.TYPE in TERMINAL_TYPES:  # before it: nothing runs after a terminal
                    self._turn_marked(request.turn_id, context, turn)
                yield payload
        finally:
            if self.turns.get(context.session_id) is turn:
                del self.turns[context.session_id]

    async def steer_turn(self, request: SteerTurnRequest, context: SessionContext) -> None:
        """``POST /session/{id}/prompt_async`` while the turn's prompt runs: OpenCode's loop
        takes the message into its next model request (waiting a moment for the prompt to be
        posted when the steer comes right after the turn started)."""
        # The runtime calls this only while its turn runs: the server may still be starting
        # (seconds, on a loaded machine). The wait ends with the turn.
        seen: ServeTurn | None = None
        with anyio.move_on_after(STEER_WAIT):
            while True:
                turn = self.turns.get(request.session.session_id)
                if turn is None and seen is not None:
                    break  # the turn ended
                if turn is not None:
                    seen = turn
                    if await turn.steer(request.text):
                        return
                await anyio.sleep(0.05)
        raise HarnessError("turn-not-found", "no opencode turn is running in this session")

    def _turn_marked(self, turn_id: str, context: SessionContext, turn: ServeTurn) -> None:
        """Keep the turn's user message index (where a fork or rewind cuts), and that its
        fork was made."""
        branches = Branches.load(context.state_dir, BRANCHES_FILE)
        if turn.branched:
            branches.pending = None
        if turn.user_index is not None and turn.user_index >= 0:
            branches.add(turn_id, str(turn.user_index))
        branches.save()

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        """A child whose first turn forks the parent's session (from a copy of the parent's
        data directory) before the first turn it does not keep."""
        ref = await self.open_session(request.open, context)
        carried = Branches.of_parent(request, BRANCHES_FILE)
        if carried is None:
            return ref  # nothing of an opencode conversation to carry
        parent, marks, kept = carried
        native = NativeSession.load(parent, STATE_FILE, what="no opencode state").native_id
        source = Path(parent) / "home" / DATA_DIR
        if native is None or not source.is_dir():
            raise HarnessError("invalid-request", "opencode has no session to fork")
        target = Path(context.state_dir) / "home" / DATA_DIR
        await anyio.to_thread.run_sync(
            lambda: shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        )
        marks.save_child(
            context.state_dir, kept, {"session": native, "before": _index(marks, kept)}
        )
        return ref

    async def rewind_session(self, request: RewindSessionRequest, context: SessionContext) -> None:
        """The next turn forks the session before the first dropped turn's message."""
        kept = [turn.turn_id for turn in request.turns]
        Branches.rewound(
            context.state_dir, BRANCHES_FILE, kept, lambda marks: {"before": _index(marks, kept)}
        )


def _index(marks: Branches, kept: list[str]) -> int | None:
    """The user message index of the first turn not ``kept`` (``None``: every turn is)."""
    dropped = marks.first_dropped(kept)
    return int(dropped) if dropped is not None and dropped.isdigit() else None


__all__ = ["OpenCodeAdapter", "ServeEvents", "classify", "message_body", "parse_events"]
