"""``pi --mode json`` lines -> contract payloads (pure: no I/O).

**Pi exits 0 when the model call failed**: the outcome is read from the stream (``stopReason:
"error"`` + ``errorMessage``, classified here and never forwarded), not from the exit code alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness_cli_kit import JsonLinesStream, count, positive_cost, safe_name, usage_report
from harness_cli_kit.calls import audit_summary
from harness_cli_kit.classify import reason_from
from harness_cli_kit.tools import SHELL_AND_FILES, ToolCalls, call_id_of
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    Status,
    TurnCompleted,
    TurnFailed,
    UsageReported,
)

TOOL_SUMMARIES = {
    **SHELL_AND_FILES,
    "find": "listed files",
    "ls": "listed a directory",
}
_STATUS = re.compile(r"^\s*(\d{3})\b")
_AUTH = re.compile(r"unauthori[sz]ed|invalid api key|authentication", re.I)
_UNREACHABLE = re.compile(
    r"connection error|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|fetch failed|unable to connect|"
    r"cannot connect|socket hang up|ETIMEDOUT|network",
    re.I,
)


def classify(message: Any) -> str:
    """Map Pi's ``errorMessage`` to a fixed reason (the text itself never leaves the adapter)."""
    text = message if isinstance(message, str) else ""
    match = _STATUS.match(text)
    if match:  # a leading HTTP status decides alone
        return reason_from(int(match.group(1)), text)
    return reason_from(None, text, auth=_AUTH, unreachable=_UNREACHABLE)


class PiStream(JsonLinesStream):
    """Turns ``pi --mode json`` lines into payloads (pure: no I/O)."""

    cli = "pi"

    def __init__(self) -> None:
        super().__init__()
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
                out += self._tools.start(call_id, name, audit_summary(name, data.get("args")))
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
        return usage_report(
            dict(self._usage),
            requests=self.requests or None,
            cost_usd=self._cost if self._cost > 0 else None,
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
