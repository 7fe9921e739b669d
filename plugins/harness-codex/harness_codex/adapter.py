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

from harness_cli_kit import (
    JsonLinesStream,
    api_key,
    check_cli,
    cli_details,
    count,
    extra_env,
    int_setting,
    require_workspace,
    safe_id,
    safe_prompt,
)
from harness_cli_kit.lifecycle import PerTurnCliAdapter
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    Payload,
    RunTurnRequest,
    SessionContext,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    Usage,
    UsageReported,
)

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


class CodexStream(JsonLinesStream):
    """Turns ``codex exec --json`` lines into payloads (pure: no I/O)."""

    cli = "codex"

    def __init__(self, *, network_waits: int = 1) -> None:
        super().__init__()
        self.thread_id: str | None = None
        self.completed = False
        self.usage_payload: UsageReported | None = None
        self._network_waits = network_waits
        self._waits = 0
        self._requests = 0
        self._started: set[str] = set()
        self._done: set[str] = set()

    def event(self, data: dict[str, Any]) -> list[Payload]:
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
        fields = {
            "input_tokens": count(usage.get("input_tokens")),
            "output_tokens": count(usage.get("output_tokens")),
            "cache_read_tokens": count(usage.get("cached_input_tokens")),
            "cache_write_tokens": count(usage.get("cache_write_input_tokens")),
            "reasoning_tokens": count(usage.get("reasoning_output_tokens")),
        }
        if any(v is not None for v in fields.values()):
            # Codex reports no cost: unknown, not zero.
            self.usage_payload = UsageReported(usage=Usage(**fields))

    def usage(self) -> UsageReported | None:
        return self.usage_payload

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        if not self.completed:
            return self.unfinished("ended without finishing the turn")
        return self.exit_failure(exit_code) or TurnCompleted(text=self.last_text)


parse_stream = CodexStream.parse


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


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


class CodexAdapter(PerTurnCliAdapter):
    """``codex``: Codex CLI, one ``codex exec`` per turn, resume by thread id."""

    name = NAME
    state_file = STATE_FILE
    state_key = "thread_id"

    def __init__(self) -> None:
        super().__init__()
        self._descriptor: HarnessDescriptor | None = None

    def describe(self) -> HarnessDescriptor:
        if self._descriptor is None:
            details = cli_details(BINARY, f"@openai/codex {TESTED_CLI}")
            details["wire_api"] = "openai-responses"
            details["permission_modes"] = (
                "approval never; strict=read-only, auto=workspace-write, "
                "dangerous=danger-full-access sandbox"
            )
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

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self.session(request)
        workspace = require_workspace(context, NAME)
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
            "PWD": workspace,
            KEY_VAR: settings["key"] or "",
            **extra_env(context.config),
        }
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
            workspace,
        ]
        thread = safe_id(session.native_id)
        if thread:
            argv += ["resume", thread]
        argv += ["--", safe_prompt(request.prompt)]
        # stdin stays closed (/dev/null): with an open pipe codex waits for input forever.
        process = await context.spawn(argv, env=env, cwd=workspace)
        stream = CodexStream(network_waits=settings["network_waits"])
        async for payload in stream.relay(process, lambda: session.remember(stream.thread_id)):
            yield payload
        for payload in stream.ending(stream.exit_code):
            yield payload


__all__ = ["CodexAdapter", "CodexStream", "classify", "parse_stream", "render_config"]
