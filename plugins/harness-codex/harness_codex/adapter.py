"""The Codex adapter: one ``codex exec --json`` process per turn.

What it relies on (verified against @openai/codex 0.171.0, see ``docs/cli-streams.md``):

- a private ``CODEX_HOME`` (and ``HOME``) under the session's ``state_dir`` with a generated
  ``config.toml``: one model provider whose ``base_url`` comes from the session config or the
  injected credentials, ``wire_api = "responses"``, the key named by ``env_key`` (so it lives
  only in the process environment, never on disk), and bounded ``request_max_retries`` /
  ``stream_max_retries``;
- ``TMPDIR`` under ``state_dir`` too: Codex refuses to create its sandbox helper when
  ``CODEX_HOME`` is inside the temporary directory, and its ``workspace-write`` sandbox then
  silently runs no command;
- stdin closed (with an open pipe it waits for input forever);
- the thread id from ``thread.started`` kept in ``state_dir``; later turns and resume run
  ``codex exec ... resume THREAD_ID``;
- posture -> sandbox mode (``strict`` read-only, ``auto`` workspace-write, ``dangerous``
  danger-full-access), approval policy ``never`` (``codex exec`` cannot ask).

Codex never gives up on an unreachable endpoint (``Reconnecting... waiting for network`` forever,
whatever the retry settings): the first such notice ends the turn ``provider-unavailable``.
Failures are classified from the stream; Codex's text is never forwarded.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    OpenSessionRequest,
    Payload,
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

from . import _cli

NAME = "codex"
BINARY = "codex"
TESTED_CLI = "0.171.0"
KEY_VAR = "HARNESS_CODEX_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "codex-thread.json"
DEFAULT_RETRIES = 1
SANDBOX_MODES = {
    "strict": "read-only",
    "auto": "workspace-write",
    "dangerous": "danger-full-access",
}

#: Codex item types that are tool calls, with the contract name and an adapter-authored summary.
TOOL_ITEMS = {
    "command_execution": ("shell", "ran a shell command"),
    "file_change": ("apply_patch", "changed files"),
    "mcp_tool_call": ("mcp", "called an MCP tool"),
    "web_search": ("web_search", "searched the web"),
}
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,256}$")
_AUTH = re.compile(r"\b(401|403)\b|Unauthorized|Forbidden|invalid api key|authenticat", re.I)
_UNAVAILABLE = re.compile(
    r"\b(408|429|5\d\d)\b|Too Many Requests|high demand|exceeded retry limit|overloaded|"
    r"server error|Service Unavailable|Bad Gateway|Gateway Timeout|waiting for network|"
    r"Connection failed|error sending request|connection refused",
    re.I,
)
_WAITING_FOR_NETWORK = re.compile(r"waiting for network", re.I)


def classify(message: Any) -> str:
    """Map a Codex error message to a fixed reason (the text is read here, never sent)."""
    text = message if isinstance(message, str) else ""
    if _AUTH.search(text):
        return "authentication-required"
    if _UNAVAILABLE.search(text):
        return "provider-unavailable"
    return "provider-failed"


_HINTS = {
    "authentication-required": "the model endpoint rejected the credentials",
    "provider-unavailable": "the model endpoint was unreachable or overloaded",
    "provider-failed": "codex reported a model error",
}


def safe_id(value: Any) -> str | None:
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


class CodexStream:
    """Turns ``codex exec --json`` lines into payloads (pure: no I/O)."""

    def __init__(self, *, network_waits: int = 1) -> None:
        self.thread_id: str | None = None
        self.failure: str | None = None
        self.completed = False
        self.garbage = 0
        self.last_text: str | None = None
        self.usage_payload: UsageReported | None = None
        self._network_waits = network_waits
        self._waits = 0
        self._requests = 0
        self._started: set[str] = set()
        self._done: set[str] = set()

    def feed(self, line: bytes) -> list[Payload]:
        if not line.strip():
            return []
        try:
            data = json.loads(line)
        except ValueError:
            self.garbage += 1
            return []
        if not isinstance(data, dict):
            self.garbage += 1
            return []
        kind = data.get("type")
        if kind == "thread.started":
            tid = safe_id(data.get("thread_id"))
            if tid is not None:
                self.thread_id = tid
            return [Status(message="codex thread started")]
        if kind == "turn.started":
            return []
        if kind in ("item.started", "item.updated", "item.completed"):
            return self._item(data.get("item"), kind == "item.completed")
        if kind == "turn.completed":
            self.completed = True
            self._usage(data.get("usage"))
            return []
        if kind == "turn.failed":
            error = data.get("error")
            message = error.get("message") if isinstance(error, Mapping) else None
            self.failure = classify(message)
            return []
        if kind == "error":
            return self._error(data.get("message"))
        return []

    def _error(self, message: Any) -> list[Payload]:
        text = message if isinstance(message, str) else ""
        if _WAITING_FOR_NETWORK.search(text):
            # Codex retries an unreachable endpoint forever; give up after a bounded number.
            self._waits += 1
            if self._waits >= self._network_waits:
                self.failure = "provider-unavailable"
                return []
            return [Status(message="waiting for the model endpoint")]
        if text.startswith("Reconnecting"):
            if classify(text) == "authentication-required":
                self.failure = "authentication-required"
                return []
            return [Status(message="retrying the model request")]
        return []

    def _item(self, item: Any, completed: bool) -> list[Payload]:
        if not isinstance(item, Mapping):
            return []
        itype = item.get("type")
        if itype == "agent_message":
            text = item.get("text")
            if completed and isinstance(text, str) and text:
                self.last_text = text
                return [MessageCompleted(text=text)]
            return []
        if itype not in TOOL_ITEMS:
            # reasoning, todo_list, and the "error" item Codex uses for warnings (e.g. unknown
            # model metadata) carry nothing for the contract.
            return []
        call_id = safe_id(item.get("id"))
        if call_id is None:
            return []
        name, summary = TOOL_ITEMS[itype]
        out: list[Payload] = []
        if call_id not in self._started:
            self._started.add(call_id)
            out.append(ToolStarted(call_id=call_id, name=name, summary=summary))
        status = item.get("status")
        if completed and call_id not in self._done:
            self._done.add(call_id)
            ok = status in (None, "completed")
            if itype == "command_execution":
                ok = ok and item.get("exit_code") in (0, None)
            text = summary if ok else f"the {name} call failed"
            if status == "declined":
                text = f"the {name} call was declined by the sandbox policy"
            out.append(ToolCompleted(call_id=call_id, name=name, ok=ok, summary=text))
        return out

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return

        def count(key: str) -> int | None:
            value = usage.get(key)
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            return value if ok else None

        fields = {
            "input_tokens": count("input_tokens"),
            "output_tokens": count("output_tokens"),
            "cache_read_tokens": count("cached_input_tokens"),
            "cache_write_tokens": count("cache_write_input_tokens"),
            "reasoning_tokens": count("reasoning_output_tokens"),
        }
        if any(v is not None for v in fields.values()):
            # Codex reports no cost: unknown, not zero.
            self.usage_payload = UsageReported(usage=Usage(**fields))

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return TurnFailed(reason=self.failure, hint=_HINTS[self.failure])
        if not self.completed:
            if self.garbage:
                return TurnFailed(reason="provider-failed", hint="codex wrote an unreadable stream")
            return TurnFailed(
                reason="provider-failed", hint="codex ended without finishing the turn"
            )
        if exit_code not in (0, None):
            return TurnFailed(
                reason="provider-failed", hint=f"codex exited with status {exit_code}"
            )
        return TurnCompleted(text=self.last_text)


def parse_stream(lines: list[bytes], exit_code: int = 0) -> list[Payload]:
    """Parse a whole captured stream (for tests and tooling)."""
    stream = CodexStream()
    out: list[Payload] = []
    for line in lines:
        out.extend(stream.feed(line))
        if stream.failure is not None:
            break
    if stream.usage_payload is not None:
        out.append(stream.usage_payload)
    out.append(stream.terminal(exit_code))
    return out


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _int_setting(config: Mapping[str, Any], key: str, default: int, high: int) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise HarnessError("invalid-request", f"{key} must be an integer 0-{high}")
    return value


def render_config(
    *, base_url: str, model: str | None, retries: int, posture: str, wire_api: str
) -> str:
    lines = []
    if model:
        lines.append(f"model = {_toml_str(model)}")
    lines += [
        f'model_provider = "{PROVIDER_ID}"',
        'approval_policy = "never"',
        f"sandbox_mode = {_toml_str(SANDBOX_MODES[posture])}",
        "check_for_update_on_startup = false",
        "",
        "[history]",
        'persistence = "none"',
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


def safe_prompt(prompt: str) -> str:
    return " " + prompt if prompt.startswith("-") else prompt


def _load_thread(state_dir: str) -> str | None:
    try:
        value = json.loads((Path(state_dir) / STATE_FILE).read_text()).get("thread_id")
    except (OSError, ValueError, AttributeError):
        return None
    return safe_id(value)


def _save_thread(state_dir: str, thread_id: str | None) -> None:
    path = Path(state_dir) / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"thread_id": thread_id}))
    tmp.replace(path)


class _Session:
    def __init__(self, cli: str, thread_id: str | None) -> None:
        self.cli = cli
        self.thread_id = thread_id


class CodexAdapter:
    """``codex``: Codex CLI, one ``codex exec`` per turn, resume by thread id."""

    name = NAME

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._descriptor: HarnessDescriptor | None = None

    def describe(self) -> HarnessDescriptor:
        if self._descriptor is None:
            path = _cli.find_cli({}, BINARY)
            version = _cli.version_sync(path) if path else None
            details = {
                "tested_cli": f"@openai/codex {TESTED_CLI}",
                "cli_version": version or "not found",
                "wire_api": "openai-responses",
                "permission_modes": "approval never; strict=read-only, auto=workspace-write, "
                "dangerous=danger-full-access sandbox",
            }
            if path:
                details["cli_path"] = path[-128:]
            self._descriptor = HarnessDescriptor(
                provider=NAME,
                targets=["local"],
                features=["resume", "cancel", "usage", "permissions"],
                version="0.1.0",
                vendor="openai",
                display_name="Codex",
                details=details,
            )
        return self._descriptor

    # -- sessions ---------------------------------------------------------------------------

    def _dirs(self, context: SessionContext) -> tuple[Path, Path]:
        state = Path(context.state_dir)
        home, tmp = state / "codex-home", state / "tmp"
        home.mkdir(parents=True, exist_ok=True)
        tmp.mkdir(parents=True, exist_ok=True)
        return home, tmp

    async def _check_cli(self, context: SessionContext) -> str:
        path = _cli.find_cli(context.config, BINARY)
        if path is None:
            raise HarnessError("provider-unavailable", "the codex CLI was not found")
        home, tmp = self._dirs(context)
        env = {"HOME": str(home), "CODEX_HOME": str(home), "TMPDIR": str(tmp)}
        if await _cli.version_via(context, path, env) is None:
            raise HarnessError("provider-unavailable", "the codex CLI did not report a version")
        return path

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        self._settings(context)
        path = await self._check_cli(context)
        self._sessions[context.session_id] = _Session(path, None)
        _save_thread(context.state_dir, None)
        return SessionRef(provider=NAME, target=request.target, session_id=context.session_id)

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        if not (Path(context.state_dir) / STATE_FILE).exists():
            raise HarnessError("session-not-found", "no codex state for this session")
        self._settings(context)
        path = await self._check_cli(context)
        self._sessions[request.session.session_id] = _Session(path, _load_thread(context.state_dir))
        return request.session

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> dict[str, Any]:
        config, injected = context.config, context.env
        base_url = config.get("base_url") or injected.get("OPENAI_BASE_URL")
        if base_url is None:
            base_url = "https://api.openai.com/v1"
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise HarnessError("invalid-request", "base_url must be an http(s) URL")
        if isinstance(config.get("api_key"), str) and config["api_key"]:
            key: str | None = config["api_key"]
            context.add_secret(config["api_key"])
        else:
            key = injected.get(str(config.get("api_key_env") or "OPENAI_API_KEY"))
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
            "retries": _int_setting(config, "max_retries", DEFAULT_RETRIES, 10),
            "network_waits": _int_setting(config, "network_waits", 1, 100) or 1,
        }

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.get(request.session.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        if context.workspace is None:
            raise HarnessError("invalid-request", "codex needs a local workspace")
        settings = self._settings(context)
        home, tmp = self._dirs(context)
        (home / "config.toml").write_text(
            render_config(
                base_url=settings["base_url"],
                model=settings["model"],
                retries=settings["retries"],
                posture=context.posture,
                wire_api=settings["wire_api"],
            )
        )
        env = {
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "TMPDIR": str(tmp),
            "PWD": context.workspace,
            KEY_VAR: settings["key"] or "",
        }
        extra = context.config.get("env")
        if isinstance(extra, Mapping):
            env.update({str(k): str(v) for k, v in extra.items()})
        argv = [
            session.cli,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--color",
            "never",
            "-s",
            SANDBOX_MODES[context.posture],
            "-C",
            context.workspace,
        ]
        if session.thread_id:
            argv += ["resume", session.thread_id]
        argv += ["--", safe_prompt(request.prompt)]
        # stdin stays closed (/dev/null): with an open pipe codex waits for input forever.
        process = await context.spawn(argv, env=env, cwd=context.workspace)
        stream = CodexStream(network_waits=settings["network_waits"])
        async for line in process.lines():
            for payload in stream.feed(line):
                yield payload
            if stream.thread_id and session.thread_id is None:
                session.thread_id = stream.thread_id
                _save_thread(context.state_dir, stream.thread_id)
            if stream.failure is not None:
                break
        code = None if stream.failure is not None else await process.wait()
        if stream.usage_payload is not None:
            yield stream.usage_payload
        yield stream.terminal(code)

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # `codex exec` has no in-band cancel: the runtime kills the turn's process group.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)


__all__ = ["CodexAdapter", "CodexStream", "classify", "parse_stream", "render_config"]
