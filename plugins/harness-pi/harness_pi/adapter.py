"""The Pi adapter: one ``pi --mode rpc`` process per turn.

What it relies on (verified against @mariozechner/pi-coding-agent 0.73.1, see
``docs/cli-streams.md``):

- a private ``PI_CODING_AGENT_DIR`` (and HOME) under the session's ``state_dir`` holding a
  generated ``models.json`` (one provider ``harness`` pointing at the session's base URL, whose
  ``apiKey`` names the environment variable ``HARNESS_PI_API_KEY`` - the key itself is never
  written to a file) and ``settings.json`` with Pi's own retries off (otherwise an unreachable
  endpoint takes ~21 s);
- **Pi exits 0 when the model call failed**: the outcome is read from the stream
  (``stopReason: "error"`` + ``errorMessage``), never from the exit code alone;
- resume with ``--session NATIVE_ID``; the id comes from the ``get_state`` response written
  before the prompt and is kept in ``state_dir``;
- approvals and structured output through the extensions shipped in ``extensions/`` (pi has
  neither natively): see :mod:`.rpc`;
- fork and conversation rewind through RPC ``fork`` (a new session file holding the active
  branch up to just before a user message entry; entry ids are kept) and ``clone``: each turn's
  prompt entry is kept in ``pi-branches.json``; a fork copies the parent's session file into
  the child's agent directory and the child's first turn forks it; a rewind's next turn forks
  the session before the first dropped turn's prompt and goes on in the new session.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Mapping
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
)
from harness_cli_kit.lifecycle import CliTurn, PerTurnCliAdapter
from harness_cli_kit.stream import JsonLinesStream
from harness_hookspecs import (
    ForkSessionRequest,
    HarnessError,
    RewindSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    SteerTurnRequest,
)

from . import mcp, rpc
from .stream import PiStream, classify, parse_stream

TESTED_CLI = "0.73.1"
KEY_VAR = "HARNESS_PI_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "pi-session.json"
#: Each turn's prompt entry id, and the branch (fork/rewind) the next turn makes.
BRANCHES_FILE = "pi-branches.json"
#: Read by the shipped extensions: tools run without asking, the answer tool's parameters.
TRUSTED_VAR = "HARNESS_PI_TRUSTED_TOOLS"
SCHEMA_VAR = "HARNESS_PI_OUTPUT_SCHEMA"
APIS = ("openai-completions", "openai-responses", "anthropic-messages")
DETAILS = {
    "approvals": "strict and auto ask the host for every tool call: a tool_call extension "
    "asks over RPC mode's extension UI requests (edited input supported)",
    "structured_output": "an extension tool whose parameters are the schema ends the turn",
    "mcp": f"host tools through the {mcp.PACKAGE} {mcp.TESTED} extension's mcp proxy tool",
    "fork": "at any turn's end: RPC fork (before the next turn's prompt entry) or clone",
    "rewind": "the conversation too: the next turn forks the session before the first "
    "dropped turn's prompt entry",
}


def asks_host(posture: str) -> bool:
    """Whether the turn loads the approval extension: every posture but ``dangerous``."""
    return posture != "dangerous"


def key_var_of(api: str) -> str:
    """The injected variable holding the key for ``api`` (its ``*_BASE_URL`` beside it)."""
    return "ANTHROPIC_API_KEY" if api == "anthropic-messages" else "OPENAI_API_KEY"


def agent_dir(state_dir: str | Path) -> Path:
    """The private ``PI_CODING_AGENT_DIR`` of a session (its session files are under it)."""
    return Path(state_dir) / "home" / ".pi" / "agent"


def session_file(state_dir: str | Path, native_id: str | None) -> Path | None:
    """The session file pi keeps for ``native_id`` (``sessions/<cwd>/<time>_<id>.jsonl``)."""
    if not native_id:
        return None
    found = sorted((agent_dir(state_dir) / "sessions").glob(f"*/*_{native_id}.jsonl"))
    return found[-1] if found else None


def entries(path: str | Path | None) -> list[dict[str, Any]]:
    """A session file's entries (none when it cannot be read)."""
    if path is None:
        return []
    with contextlib.suppress(OSError):
        lines = Path(path).read_text(errors="replace").splitlines()
        out = []
        for text in lines:
            with contextlib.suppress(ValueError):
                entry = json.loads(text)
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    out.append(entry)
        return out
    return []


def prompt_entry(path: str | Path | None, known: frozenset[str]) -> str | None:
    """The first user message entry of ``path`` not among ``known``: the turn's prompt."""
    for entry in entries(path):
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, Mapping)
            and message.get("role") == "user"
            and entry["id"] not in known
        ):
            return str(entry["id"])
    return None


class PiAdapter(PerTurnCliAdapter):
    """``pi``: the Pi coding agent, one RPC-mode process per turn, resume by native session
    id, tool calls approved through the host (the shipped approval extension)."""

    name = "pi"
    state_file = STATE_FILE
    command_name = "pi"
    #: the default api (openai-completions) takes OPENAI_API_KEY (credentials-env's fallback)
    vendor = "openai"

    display_name = "Pi coding agent"
    tested_cli = f"@mariozechner/pi-coding-agent {TESTED_CLI}"
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
    details = DETAILS
    config_properties = {
        "command": COMMAND_PROPERTY,
        "api": {"type": "string"},
        "settings": {"type": "object"},
        "mcp_extension": {"type": "string"},
    }

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str, str]:
        api = str(context.config.get("api", "openai-completions"))
        if api not in APIS:
            raise HarnessError("invalid-request", "api must be one of " + ", ".join(APIS))
        url = base_url(context, key_var_of(api).replace("_API_KEY", "_BASE_URL"))
        key = api_key(context, key_var_of(api))
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError(
                "invalid-request",
                "pi needs a model: --model MODEL (e.g. --model gpt-4.1-mini), the session's "
                "model, or config model",
            )
        return url, key, model, api

    def _write_agent_dir(
        self, context: SessionContext, agent: Path, base_url: str | None, model: str, api: str
    ) -> None:
        agent.mkdir(parents=True, exist_ok=True)
        if base_url:
            provider = {
                "baseUrl": base_url,
                "api": api,
                "apiKey": KEY_VAR,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": model, "reasoning": False}],
            }
            (agent / "models.json").write_text(
                json.dumps({"providers": {PROVIDER_ID: provider}}, indent=2)
            )
        settings: dict[str, Any] = {"retry": {"enabled": False}}
        extra = context.config.get("settings")
        if isinstance(extra, Mapping):
            settings.update(extra)
        (agent / "settings.json").write_text(json.dumps(settings, indent=2))

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        url, key, model, api = self._settings(context)
        home = Path(context.state_dir) / "home"
        agent = home / ".pi" / "agent"
        self._write_agent_dir(context, agent, url, model, api)
        argv = [*located_command(context.config, self.name), "--mode", "rpc"]
        if url:
            argv += ["--provider", PROVIDER_ID, "--model", model]
        else:
            argv += ["--model", model]
        # Only the shipped extensions load (none of the workspace's or the host's).
        argv += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        asking = asks_host(context.posture)
        if asking:
            argv += ["--extension", rpc.extension("approvals.ts")]
        pending = Branches.load(context.state_dir, BRANCHES_FILE).pending
        # a fork's child opens its copy of the parent's session file; a rewind its own session
        opened = (pending or {}).get("session") or session.native_id
        if opened:
            argv += ["--session", str(opened)]
        if context.instructions:
            # pi reads a path given to --append-system-prompt as the file's contents: always a
            # file, so no instruction text is ever taken for a path
            instructions = agent / "host-instructions.md"
            instructions.write_text(context.instructions)
            argv += ["--append-system-prompt", str(instructions)]
        bridge = bridge_of(context)
        if bridge is not None:
            path = mcp.write_config(agent, bridge)
            argv += ["--extension", mcp.extension_path(context.config), "--mcp-config", str(path)]
        env = {
            "HOME": str(home),
            "PWD": workspace,
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            KEY_VAR: key or "",
            TRUSTED_VAR: rpc.ANSWER_TOOL,
            mcp.TRUSTED_SERVER_VAR: bridge.name if bridge is not None else "",
            **extra_env(context.config),
        }
        stream = PiStream(approver=context.request_permission if asking else None)
        stream.key_var = key_var_of(api)
        copy = (pending or {}).get("session")
        known = copy if copy else session_file(context.state_dir, session.native_id)
        stream.known_entries = frozenset(entry["id"] for entry in entries(known))
        # RPC mode reads the prompt as JSON on stdin: no argv parsing ('@file', '-flag').
        commands = rpc.turn_commands(prompt)
        if pending is not None:
            stream.after_branch, commands = commands, rpc.branch_command(pending.get("before"))
            session.replace = session.native_id is not None
        return CliTurn(argv, env, stream, probe=url, started="pi started", stdin=commands)

    def turn_ended(
        self, request: RunTurnRequest, context: SessionContext, stream: JsonLinesStream
    ) -> None:
        """Keep the turn's prompt entry (where a fork or rewind cuts), and that its branch
        was made."""
        assert isinstance(stream, PiStream)
        branches = Branches.load(context.state_dir, BRANCHES_FILE)
        if stream.branched:
            branches.pending = None
        mark = prompt_entry(stream.session_file, stream.known_entries)
        if mark is not None:
            branches.add(request.turn_id, mark)
        branches.save()

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        """A child whose first turn forks a copy of the parent's session file (RPC ``fork``
        before the first turn the child does not keep, or ``clone`` when it keeps them all)."""
        ref = await self.open_session(request.open, context)
        carried = Branches.of_parent(request, BRANCHES_FILE)
        if carried is None:
            return ref  # nothing of a pi conversation to carry
        parent, marks, kept = carried
        native = None
        with contextlib.suppress(HarnessError):
            native = NativeSession.load(parent, STATE_FILE, what="no pi state").native_id
        source = session_file(parent, native)
        if source is None:
            raise HarnessError("invalid-request", "pi has no session file to fork")
        copy = agent_dir(context.state_dir) / "sessions" / source.parent.name / source.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        await anyio.to_thread.run_sync(shutil.copyfile, source, copy)
        marks.save_child(
            context.state_dir, kept, {"session": str(copy), "before": marks.first_dropped(kept)}
        )
        return ref

    async def rewind_session(self, request: RewindSessionRequest, context: SessionContext) -> None:
        """The next turn forks the session before the first dropped turn's prompt entry."""
        kept = [turn.turn_id for turn in request.turns]
        Branches.rewound(
            context.state_dir,
            BRANCHES_FILE,
            kept,
            lambda marks: {"before": marks.first_dropped(kept)},
        )

    async def steer_turn(self, request: SteerTurnRequest, context: SessionContext) -> None:
        """Pi's RPC ``steer``: queued while the agent runs, delivered after the current
        assistant turn's tool calls, before the next model request (``docs/rpc.md``)."""
        process = self.running.get(request.session.session_id)
        if process is None or process.returncode is not None:
            raise HarnessError("turn-not-found", "no pi turn is running in this session")
        await process.send(rpc.steer_command(request.text))

    def structured(self, turn: CliTurn, schema: dict[str, Any], context: SessionContext) -> None:
        """The answer tool: an extension tool whose parameters are ``schema`` (pi validates the
        arguments and sends errors back to the model); a valid call ends the turn."""
        wrapped = schema.get("type") != "object"
        parameters = (
            {"type": "object", "properties": {"value": schema}, "required": ["value"]}
            if wrapped
            else schema
        )
        turn.add_options("--extension", rpc.extension("structured_output.ts"))
        turn.env[SCHEMA_VAR] = json.dumps(parameters, separators=(",", ":"))
        assert isinstance(turn.stream, PiStream)
        turn.stream.structured = True
        turn.stream.wrapped = wrapped


__all__ = ["PiAdapter", "PiStream", "classify", "parse_stream"]
