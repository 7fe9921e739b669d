"""``opencode run --format json`` lines -> contract payloads (pure: no I/O).

Errors are classified from OpenCode's ``error`` objects; their text is never forwarded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness_cli_kit import JsonLinesStream, positive_cost, safe_name, usage_report
from harness_cli_kit.calls import audit_summary
from harness_cli_kit.classify import reason_from
from harness_cli_kit.tools import SHELL_AND_FILES, ToolCalls, call_id_of
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    TurnCompleted,
    TurnFailed,
    UsageReported,
)

#: Adapter-authored summaries per OpenCode tool (never the tool's arguments or output).
TOOL_SUMMARIES = {
    **SHELL_AND_FILES,
    "patch": "patched files",
    "glob": "listed files",
    "list": "listed a directory",
    "webfetch": "fetched a web page",
    "todowrite": "updated the todo list",
    "todoread": "read the todo list",
    "task": "ran a sub-agent task",
    "skill": "used a skill",
}


_UNREACHABLE = re.compile(r"connect|ECONNREFUSED|ENOTFOUND|fetch failed", re.I)


def classify(error: Mapping[str, Any] | None) -> str:
    """Map an OpenCode ``error`` object to a fixed reason (never forwarding its text)."""
    if not isinstance(error, Mapping):
        return "provider-failed"
    name = str(error.get("name") or "")
    data = error.get("data") if isinstance(error.get("data"), Mapping) else {}
    status = data.get("statusCode") if isinstance(data, Mapping) else None
    message = str(data.get("message") or "") if isinstance(data, Mapping) else ""
    if name == "ProviderAuthError":
        return "authentication-required"
    return reason_from(status, message, unreachable=_UNREACHABLE)


class OpenCodeStream(JsonLinesStream):
    """Turns ``opencode run --format json`` lines into payloads (pure: no I/O)."""

    cli = "opencode"

    def __init__(self) -> None:
        super().__init__()
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
        arguments = state.get("input") if isinstance(state, Mapping) else None
        out = self._tools.start(call_id, name, audit_summary(name, arguments))
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
        return usage_report(
            {k: int(v) for k, v in self._usage.items()},
            requests=self.steps or None,
            # OpenCode reports 0 when the model has no configured price: unknown, not free.
            cost_usd=self._cost if self._cost > 0 else None,
        )

    def terminal(self, exit_code: int | None) -> Payload:
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="opencode reported a model error")
        failure = self.exit_failure(exit_code)
        if failure is None and self.steps == 0:
            failure = TurnFailed(reason="provider-failed", hint="opencode finished no model step")
        return failure or TurnCompleted(text=self.last_text)


parse_stream = OpenCodeStream.parse
