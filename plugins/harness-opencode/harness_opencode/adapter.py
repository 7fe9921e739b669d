"""The OpenCode adapter: one ``opencode run --format json`` process per turn.

What it relies on (verified against opencode-ai 1.18.33, see ``docs/cli-streams.md``):

- a private HOME and XDG dirs under the session's ``state_dir`` (sessions live in the data dir, so
  resume needs the same dirs) and a generated config file given by ``OPENCODE_CONFIG``;
- ``--dir WORKSPACE`` *and* ``PWD=WORKSPACE`` (a Bun binary: it takes its cwd from ``$PWD``);
- an OpenAI-compatible provider whose ``apiKey`` is ``{env:HARNESS_OPENCODE_API_KEY}``, so the key
  only ever lives in the process environment (never in a file);
- ``--title`` on the first turn (no title-generation side request);
- resume with ``--session NATIVE_ID``; the native id is only known from the first turn's stream,
  so it is kept in ``state_dir``.

OpenCode takes ~70 s to give up on an unreachable endpoint and has no retry knob, so the adapter
probes the endpoint (TCP connect, bounded) before spawning and fails ``provider-unavailable`` at
once; anything later is bounded by the controller's deadline.
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
    base_url,
    command_of,
    extra_env,
    positive_cost,
    preflight,
    require_workspace,
    safe_name,
    safe_prompt,
)
from harness_cli_kit.lifecycle import PerTurnCliAdapter
from harness_cli_kit.tools import ToolCalls, call_id_of
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    Payload,
    RunTurnRequest,
    SessionContext,
    Status,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
)

TESTED_CLI = "1.18.33"
KEY_VAR = "HARNESS_OPENCODE_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "opencode-session.json"

#: Adapter-authored summaries per OpenCode tool (never the tool's arguments or output).
TOOL_SUMMARIES = {
    "bash": "ran a shell command",
    "write": "wrote a file",
    "edit": "edited a file",
    "patch": "patched files",
    "read": "read a file",
    "glob": "listed files",
    "grep": "searched files",
    "list": "listed a directory",
    "webfetch": "fetched a web page",
    "todowrite": "updated the todo list",
    "todoread": "read the todo list",
    "task": "ran a sub-agent task",
    "skill": "used a skill",
}


def classify(error: Mapping[str, Any] | None) -> str:
    """Map an OpenCode ``error`` object to a fixed reason (never forwarding its text)."""
    if not isinstance(error, Mapping):
        return "provider-failed"
    name = str(error.get("name") or "")
    data = error.get("data") if isinstance(error.get("data"), Mapping) else {}
    status = data.get("statusCode") if isinstance(data, Mapping) else None
    message = str(data.get("message") or "") if isinstance(data, Mapping) else ""
    if name == "ProviderAuthError" or status in (401, 403):
        return "authentication-required"
    if status in (408, 429, 502, 503, 504, 529):
        return "provider-unavailable"
    if status is None and re.search(r"connect|ECONNREFUSED|ENOTFOUND|fetch failed", message, re.I):
        return "provider-unavailable"
    return "provider-failed"


class OpenCodeStream(JsonLinesStream):
    """Turns ``opencode run --format json`` lines into payloads (pure: no I/O)."""

    cli = "opencode"

    def __init__(self) -> None:
        super().__init__()
        self.session_id: str | None = None
        #: A model error (the stream goes on: OpenCode may still end the step).
        self.error: str | None = None
        self.steps = 0
        self.finished_stop = False
        self._tools = ToolCalls(TOOL_SUMMARIES)
        self._step_text: list[str] = []
        self._usage: dict[str, float] = {}
        self._cost = 0.0

    def event(self, data: dict[str, Any]) -> list[Payload]:
        sid = data.get("sessionID")
        if isinstance(sid, str) and sid and self.session_id is None:
            self.session_id = sid
        kind = data.get("type")
        part = data.get("part") if isinstance(data.get("part"), dict) else {}
        out: list[Payload] = []
        if kind == "text":
            text = part.get("text")
            if isinstance(text, str) and text:
                self._step_text.append(text)
                out.append(MessageDelta(text=text))
        elif kind == "tool_use":
            out.extend(self._tool(part))
        elif kind == "step_finish":
            self.steps += 1
            self._add_usage(part)
            if self._step_text:
                self.last_text = "".join(self._step_text)
                out.append(MessageCompleted(text=self.last_text))
                self._step_text = []
            if part.get("reason") == "stop":
                self.finished_stop = True
        elif kind == "error":
            self.error = classify(data.get("error"))
        return out

    def _tool(self, part: Mapping[str, Any]) -> list[Payload]:
        call_id = call_id_of(part.get("callID") or part.get("id"))
        if call_id is None:
            return []
        name = safe_name(part.get("tool"))
        state = part.get("state") if isinstance(part.get("state"), Mapping) else {}
        status = state.get("status") if isinstance(state, Mapping) else None
        out = self._tools.start(call_id, name)
        if status in ("completed", "error"):
            out += self._tools.finish(call_id, name, status == "completed")
        return out

    def _add_usage(self, part: Mapping[str, Any]) -> None:
        tokens = part.get("tokens")
        if not isinstance(tokens, Mapping):
            return
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), Mapping) else {}
        pairs = {
            "input_tokens": tokens.get("input"),
            "output_tokens": tokens.get("output"),
            "reasoning_tokens": tokens.get("reasoning"),
            "cache_read_tokens": cache.get("read") if isinstance(cache, Mapping) else None,
            "cache_write_tokens": cache.get("write") if isinstance(cache, Mapping) else None,
        }
        for key, value in pairs.items():
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self._usage[key] = self._usage.get(key, 0) + value
        self._cost += positive_cost(part.get("cost")) or 0.0

    def usage(self) -> UsageReported | None:
        if not self._usage:
            return None
        return UsageReported(
            usage=Usage(
                **{k: int(v) for k, v in self._usage.items()},
                requests=self.steps or None,
                # OpenCode reports 0 when the model has no configured price: unknown, not free.
                cost_usd=self._cost if self._cost > 0 else None,
            )
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="opencode reported a model error")
        failure = self.exit_failure(exit_code)
        if failure is None and self.steps == 0:
            failure = TurnFailed(reason="provider-failed", hint="opencode finished no model step")
        return failure or TurnCompleted(text=self.last_text)


parse_stream = OpenCodeStream.parse


class OpenCodeAdapter(PerTurnCliAdapter):
    """``opencode``: OpenCode CLI, one process per turn, resume by native session id."""

    name = "opencode"
    state_file = STATE_FILE

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name,
            targets=["local"],
            features=["resume", "cancel", "usage"],
            version="0.1.0",
            display_name="OpenCode",
            details={"tested_cli": f"opencode-ai {TESTED_CLI}", "wire_api": "chat-completions"},
        )

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    # -- turn -------------------------------------------------------------------------------

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str]:
        url = base_url(context, "OPENAI_BASE_URL")
        key = api_key(context, "OPENAI_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError("invalid-request", "opencode needs a model (request or config)")
        return url, key, model

    def _write_config(
        self, context: SessionContext, home: Path, base_url: str | None, model: str
    ) -> tuple[Path, str]:
        allow = "deny" if context.posture == "strict" else "allow"
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "permission": {"edit": allow, "bash": allow, "webfetch": allow},
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
        session = self.session(request)
        workspace = require_workspace(context, self.name)
        url, key, model = self._settings(context)
        home = Path(context.state_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        config_path, full_model = self._write_config(context, home, url, model)
        unreachable = await preflight(context, url)
        if unreachable is not None:
            yield unreachable
            return
        argv = [*command_of(context.config, [self.name]), "run", "--format", "json"]
        argv += ["--dir", workspace, "-m", full_model]
        if session.native_id:
            argv += ["--session", session.native_id]
        else:
            argv += ["--title", "harness_core session"]
        argv += ["--", safe_prompt(request.prompt)]
        process = await context.spawn(
            argv, env=self._env(context, home, config_path, key), cwd=workspace
        )
        yield Status(message="opencode started")
        stream = OpenCodeStream()
        async for payload in stream.relay(process, lambda: session.remember(stream.session_id)):
            yield payload
        for payload in stream.ending(stream.exit_code):
            yield payload


__all__ = ["OpenCodeAdapter", "OpenCodeStream", "classify", "parse_stream"]
