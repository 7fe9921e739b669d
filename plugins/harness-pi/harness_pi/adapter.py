"""The Pi adapter: one ``pi --mode json`` process per turn.

What it relies on (verified against @mariozechner/pi-coding-agent 0.73.1, see
``docs/cli-streams.md``):

- a private ``PI_CODING_AGENT_DIR`` (and HOME) under the session's ``state_dir`` holding a
  generated ``models.json`` (one provider ``harness`` pointing at the session's base URL, whose
  ``apiKey`` names the environment variable ``HARNESS_PI_API_KEY`` - the key itself is never
  written to a file) and ``settings.json`` with Pi's own retries off (otherwise an unreachable
  endpoint takes ~21 s);
- **Pi exits 0 when the model call failed**: the outcome is read from the stream
  (``stopReason: "error"`` + ``errorMessage``), never from the exit code alone;
- resume with ``--session NATIVE_ID``; the id comes from the first stream line (the session
  header) and is kept in ``state_dir``.
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
    count,
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

TESTED_CLI = "0.73.1"
KEY_VAR = "HARNESS_PI_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "pi-session.json"
APIS = ("openai-completions", "openai-responses", "anthropic-messages")

TOOL_SUMMARIES = {
    "bash": "ran a shell command",
    "write": "wrote a file",
    "edit": "edited a file",
    "read": "read a file",
    "grep": "searched files",
    "find": "listed files",
    "ls": "listed a directory",
}
_STATUS = re.compile(r"^\s*(\d{3})\b")
_UNREACHABLE = re.compile(
    r"connection error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|unable to connect|"
    r"cannot connect|socket hang up|ETIMEDOUT|network",
    re.I,
)


def classify(message: Any) -> str:
    """Map Pi's ``errorMessage`` to a fixed reason (the text itself never leaves the adapter)."""
    text = message if isinstance(message, str) else ""
    match = _STATUS.match(text)
    if match:
        status = int(match.group(1))
        if status in (401, 403):
            return "authentication-required"
        if status in (408, 429, 502, 503, 504, 529):
            return "provider-unavailable"
        return "provider-failed"
    if re.search(r"unauthori[sz]ed|invalid api key|authentication", text, re.I):
        return "authentication-required"
    if _UNREACHABLE.search(text):
        return "provider-unavailable"
    return "provider-failed"


class PiStream(JsonLinesStream):
    """Turns ``pi --mode json`` lines into payloads (pure: no I/O)."""

    cli = "pi"

    def __init__(self) -> None:
        super().__init__()
        self.session_id: str | None = None
        #: A model error; a later successful message means Pi retried it away.
        self.error: str | None = None
        self.ended = False
        self.aborted = False
        self.requests = 0
        self._usage: dict[str, int] = {}
        self._cost = 0.0
        self._tools = ToolCalls(TOOL_SUMMARIES)

    def event(self, data: dict[str, Any]) -> list[Payload]:
        kind = data.get("type")
        out: list[Payload] = []
        if kind == "session":
            sid = data.get("id")
            if isinstance(sid, str) and sid and self.session_id is None:
                self.session_id = sid
        elif kind == "message_update":
            event = data.get("assistantMessageEvent")
            if isinstance(event, Mapping) and event.get("type") == "text_delta":
                delta = event.get("delta")
                if isinstance(delta, str) and delta:
                    out.append(MessageDelta(text=delta))
        elif kind == "message_end":
            out.extend(self._message_end(data.get("message")))
        elif kind in ("tool_execution_start", "tool_execution_end"):
            call_id, name = call_id_of(data.get("toolCallId")), safe_name(data.get("toolName"))
            if call_id is not None:
                out += self._tools.start(call_id, name)
                if kind == "tool_execution_end":
                    out += self._tools.finish(call_id, name, not data.get("isError"))
        elif kind == "auto_retry_start":
            out.append(Status(message="pi is retrying the model call"))
        elif kind == "agent_end":
            self.ended = True
        return out

    def _message_end(self, message: Any) -> list[Payload]:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            return []
        self.requests += 1
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            for key, source in (
                ("input_tokens", "input"),
                ("output_tokens", "output"),
                ("cache_read_tokens", "cacheRead"),
                ("cache_write_tokens", "cacheWrite"),
            ):
                value = count(usage.get(source))
                if value is not None:
                    self._usage[key] = self._usage.get(key, 0) + value
            cost = usage.get("cost")
            total = cost.get("total") if isinstance(cost, Mapping) else None
            self._cost += positive_cost(total) or 0.0
        stop = message.get("stopReason")
        if stop == "error":
            self.error = classify(message.get("errorMessage"))
            return []
        if stop == "aborted":
            self.aborted = True
        content = message.get("content")
        texts = (
            [
                block.get("text")
                for block in content
                if isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ]
            if isinstance(content, list)
            else []
        )
        text = "".join(t for t in texts if t)
        if not text:
            return []
        # The previous message's error (if any) was retried away.
        self.error = None
        self.last_text = text
        return [MessageCompleted(text=text)]

    def usage(self) -> UsageReported | None:
        if not self._usage:
            return None
        return UsageReported(
            usage=Usage(
                **self._usage,
                requests=self.requests or None,
                cost_usd=self._cost if self._cost > 0 else None,
            )
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="pi reported a model error")
        if self.aborted:
            return TurnFailed(reason="provider-failed", hint="pi aborted the turn")
        failure = self.exit_failure(exit_code)
        if failure is None and not self.ended:
            failure = TurnFailed(reason="provider-failed", hint="pi exited before the agent ended")
        return failure or TurnCompleted(text=self.last_text)


parse_stream = PiStream.parse


class PiAdapter(PerTurnCliAdapter):
    """``pi``: the Pi coding agent, one process per turn, resume by native session id."""

    name = "pi"
    state_file = STATE_FILE

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name,
            targets=["local"],
            features=["resume", "cancel", "usage"],
            version="0.1.0",
            display_name="Pi coding agent",
            details={"tested_cli": f"@mariozechner/pi-coding-agent {TESTED_CLI}"},
        )

    async def check(self, context: SessionContext) -> str:
        command_of(context.config, [self.name])
        return ""

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str, str]:
        api = str(context.config.get("api", "openai-completions"))
        if api not in APIS:
            raise HarnessError("invalid-request", "api must be one of " + ", ".join(APIS))
        vendor = "ANTHROPIC" if api == "anthropic-messages" else "OPENAI"
        url = base_url(context, f"{vendor}_BASE_URL")
        key = api_key(context, f"{vendor}_API_KEY")
        model = context.model or context.config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError("invalid-request", "pi needs a model (request or config)")
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

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self.session(request)
        workspace = require_workspace(context, self.name)
        url, key, model, api = self._settings(context)
        home = Path(context.state_dir) / "home"
        agent = home / ".pi" / "agent"
        self._write_agent_dir(context, agent, url, model, api)
        unreachable = await preflight(context, url)
        if unreachable is not None:
            yield unreachable
            return
        argv = [*command_of(context.config, [self.name]), "--mode", "json"]
        if url:
            argv += ["--provider", PROVIDER_ID, "--model", model]
        else:
            argv += ["--model", model]
        argv += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        if context.posture == "strict":
            argv += ["--tools", "read"]
        if session.native_id:
            argv += ["--session", session.native_id]
        # Pi treats a leading '@' as a file to include and a leading '-' as a flag.
        argv.append(safe_prompt(request.prompt, ("-", "@")))
        env = {
            "HOME": str(home),
            "PWD": workspace,
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            KEY_VAR: key or "",
            **extra_env(context.config),
        }
        process = await context.spawn(argv, env=env, cwd=workspace)
        yield Status(message="pi started")
        stream = PiStream()
        async for payload in stream.relay(process, lambda: session.remember(stream.session_id)):
            yield payload
        for payload in stream.ending(stream.exit_code):
            yield payload


__all__ = ["PiAdapter", "PiStream", "classify", "parse_stream"]
