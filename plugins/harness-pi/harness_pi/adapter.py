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
import shlex
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
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

TESTED_CLI = "0.73.1"
KEY_VAR = "HARNESS_PI_API_KEY"
PROVIDER_ID = "harness"
STATE_FILE = "pi-session.json"
PREFLIGHT_TIMEOUT = 3.0
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
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_STATUS = re.compile(r"^\s*(\d{3})\b")
_UNREACHABLE = re.compile(
    r"connection error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|unable to connect|"
    r"cannot connect|socket hang up|ETIMEDOUT|network",
    re.I,
)


def tool_name(value: Any) -> str:
    return value if isinstance(value, str) and _SAFE_NAME.match(value) else "tool"


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


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class PiStream:
    """Turns ``pi --mode json`` lines into payloads (pure: no I/O)."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.error: str | None = None
        self.ended = False
        self.aborted = False
        self.last_text: str | None = None
        self.requests = 0
        self._usage: dict[str, int] = {}
        self._cost = 0.0
        self._started: set[str] = set()

    def feed(self, line: bytes) -> list[Payload]:
        try:
            data = json.loads(line)
        except ValueError:
            return []
        if not isinstance(data, dict):
            return []
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
        elif kind == "tool_execution_start":
            call_id, name = data.get("toolCallId"), tool_name(data.get("toolName"))
            if isinstance(call_id, str) and 0 < len(call_id) <= 256:
                self._started.add(call_id)
                out.append(
                    ToolStarted(
                        call_id=call_id, name=name, summary=TOOL_SUMMARIES.get(name, "used a tool")
                    )
                )
        elif kind == "tool_execution_end":
            call_id, name = data.get("toolCallId"), tool_name(data.get("toolName"))
            if isinstance(call_id, str) and 0 < len(call_id) <= 256:
                if call_id not in self._started:
                    out.append(ToolStarted(call_id=call_id, name=name))
                ok = not data.get("isError")
                out.append(
                    ToolCompleted(
                        call_id=call_id,
                        name=name,
                        ok=ok,
                        summary=TOOL_SUMMARIES.get(name, "used a tool")
                        if ok
                        else "the tool call failed",
                    )
                )
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
                value = _int(usage.get(source))
                if value is not None:
                    self._usage[key] = self._usage.get(key, 0) + value
            cost = usage.get("cost")
            total = cost.get("total") if isinstance(cost, Mapping) else None
            if isinstance(total, int | float) and not isinstance(total, bool) and total > 0:
                self._cost += float(total)
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

    def terminal(self, exit_code: int) -> Payload:
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="pi reported a model error")
        if self.aborted:
            return TurnFailed(reason="provider-failed", hint="pi aborted the turn")
        if exit_code != 0:
            return TurnFailed(reason="provider-failed", hint=f"pi exited with status {exit_code}")
        if not self.ended:
            return TurnFailed(reason="provider-failed", hint="pi exited before the agent ended")
        return TurnCompleted(text=self.last_text)


def parse_stream(lines: list[bytes], exit_code: int = 0) -> list[Payload]:
    stream = PiStream()
    out: list[Payload] = []
    for line in lines:
        out.extend(stream.feed(line))
    usage = stream.usage()
    if usage is not None:
        out.append(usage)
    out.append(stream.terminal(exit_code))
    return out


def command_of(config: Mapping[str, Any]) -> list[str]:
    raw = config.get("command", "pi")
    if isinstance(raw, str):
        raw = shlex.split(raw)
    if not isinstance(raw, list | tuple) or not raw or not all(isinstance(a, str) for a in raw):
        raise HarnessError("invalid-request", "command must be a string or a list of strings")
    return list(raw)


async def endpoint_reachable(base_url: str, deadline: float | None) -> bool:
    parts = urlsplit(base_url)
    host = parts.hostname
    if not host:
        return True
    port = parts.port or (443 if parts.scheme == "https" else 80)
    timeout = PREFLIGHT_TIMEOUT
    if deadline is not None:
        timeout = max(0.1, min(timeout, deadline - anyio.current_time()))
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
    except (OSError, TimeoutError):
        return False
    await stream.aclose()
    return True


def safe_prompt(prompt: str) -> str:
    # Pi treats a leading '@' as a file to include and a leading '-' as a flag.
    return " " + prompt if prompt.startswith(("-", "@")) else prompt


def _save(state_dir: str, native_id: str | None) -> None:
    path = Path(state_dir) / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"native_session_id": native_id}))
    tmp.replace(path)


class _Session:
    def __init__(self, state_dir: str, native_id: str | None) -> None:
        self.state_dir = state_dir
        self.native_id = native_id


class PiAdapter:
    """``pi``: the Pi coding agent, one process per turn, resume by native session id."""

    name = "pi"

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name,
            targets=["local"],
            features=["resume", "cancel", "usage"],
            version="0.1.0",
            display_name="Pi coding agent",
            details={"tested_cli": f"@mariozechner/pi-coding-agent {TESTED_CLI}"},
        )

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        command_of(context.config)
        ref = SessionRef(provider=self.name, target=request.target, session_id=context.session_id)
        self._sessions[ref.session_id] = _Session(context.state_dir, None)
        _save(context.state_dir, None)
        return ref

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        command_of(context.config)
        path = Path(context.state_dir) / STATE_FILE
        try:
            value = json.loads(path.read_text()).get("native_session_id")
        except (OSError, ValueError, AttributeError):
            raise HarnessError("session-not-found", "no pi state for this session") from None
        native = value if isinstance(value, str) and value else None
        self._sessions[request.session.session_id] = _Session(context.state_dir, native)
        return request.session

    def _settings(self, context: SessionContext) -> tuple[str | None, str | None, str, str]:
        config, env = context.config, context.env
        api = str(config.get("api", "openai-completions"))
        if api not in APIS:
            raise HarnessError("invalid-request", "api must be one of " + ", ".join(APIS))
        default_url = "ANTHROPIC_BASE_URL" if api == "anthropic-messages" else "OPENAI_BASE_URL"
        base_url = config.get("base_url") or env.get(default_url)
        if base_url is not None and not isinstance(base_url, str):
            raise HarnessError("invalid-request", "base_url must be a string")
        key: str | None
        if isinstance(config.get("api_key"), str) and config["api_key"]:
            key = str(config["api_key"])
            context.add_secret(key)
        else:
            default_key = "ANTHROPIC_API_KEY" if api == "anthropic-messages" else "OPENAI_API_KEY"
            key = env.get(str(config.get("api_key_env") or default_key))
        model = context.model or config.get("model")
        if not isinstance(model, str) or not model:
            raise HarnessError("invalid-request", "pi needs a model (request or config)")
        return base_url, key, model, api

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
        session = self._sessions.get(request.session.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        if context.workspace is None:
            raise HarnessError("invalid-request", "pi needs a local workspace")
        base_url, key, model, api = self._settings(context)
        home = Path(session.state_dir) / "home"
        agent = home / ".pi" / "agent"
        self._write_agent_dir(context, agent, base_url, model, api)
        if (
            base_url
            and context.config.get("preflight", True)
            and not await endpoint_reachable(base_url, context.deadline)
        ):
            yield TurnFailed(
                reason="provider-unavailable", hint="the model endpoint is unreachable"
            )
            return
        argv = [*command_of(context.config), "--mode", "json"]
        if base_url:
            argv += ["--provider", PROVIDER_ID, "--model", model]
        else:
            argv += ["--model", model]
        argv += ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
        if context.posture == "strict":
            argv += ["--tools", "read"]
        if session.native_id:
            argv += ["--session", session.native_id]
        argv.append(safe_prompt(request.prompt))
        env = {
            "HOME": str(home),
            "PWD": context.workspace,
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            KEY_VAR: key or "",
        }
        extra = context.config.get("env")
        if isinstance(extra, Mapping):
            env.update({str(k): str(v) for k, v in extra.items()})
        process = await context.spawn(argv, env=env, cwd=context.workspace)
        yield Status(message="pi started")
        stream = PiStream()
        async for line in process.lines():
            for payload in stream.feed(line):
                yield payload
            if stream.session_id and session.native_id is None:
                session.native_id = stream.session_id
                _save(session.state_dir, stream.session_id)
        code = await process.wait()
        usage = stream.usage()
        if usage is not None:
            yield usage
        yield stream.terminal(code)

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # `pi --mode json` has no in-band cancel: the runtime kills the process group.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)


__all__ = ["PiAdapter", "PiStream", "classify", "endpoint_reachable", "parse_stream"]
