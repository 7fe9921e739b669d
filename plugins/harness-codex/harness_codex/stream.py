"""``codex exec --json`` lines -> contract payloads (pure: no I/O).

Codex never gives up on an unreachable endpoint (``Reconnecting... waiting for network`` forever,
whatever the retry settings): the first such notice ends the turn ``provider-unavailable``.
Failures are classified from the stream; Codex's text is never forwarded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness_cli_kit import JsonLinesStream, safe_id, usage_of
from harness_cli_kit.calls import audit_summary, outcome_summary
from harness_cli_kit.classify import reason_from
from harness_cli_kit.structured import drop_optional_nulls, parsed_json
from harness_hookspecs import (
    MessageCompleted,
    Payload,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    UsageReported,
)

#: Codex item types that are tool calls, with the contract name and an adapter-authored summary.
TOOL_ITEMS = {
    "command_execution": ("shell", "ran a shell command"),
    "file_change": ("apply_patch", "changed files"),
    "mcp_tool_call": ("mcp", "called an MCP tool"),
    "web_search": ("web_search", "searched the web"),
}


def _call_input(item: Mapping[str, Any]) -> dict[str, Any]:
    """What a Codex item ran: the command, or the first changed file's path."""
    changes = item.get("changes")
    first = changes[0] if isinstance(changes, list) and changes else None
    path = first.get("path") if isinstance(first, Mapping) else None
    return {"command": item.get("command"), "path": path}


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
    return reason_from(None, text, auth=_AUTH, unreachable=_UNAVAILABLE)


class CodexStream(JsonLinesStream):
    """Turns ``codex exec --json`` lines into payloads (pure: no I/O)."""

    cli = "codex"

    def __init__(self, *, network_waits: int = 1) -> None:
        super().__init__()
        self.completed = False
        self.usage_payload: UsageReported | None = None
        self._network_waits = network_waits
        self._waits = 0
        self._requests = 0
        self._started: set[str] = set()
        self._done: set[str] = set()
        #: The host's schema when the turn ran with ``--output-schema`` (its answer is JSON).
        self.output_schema: Mapping[str, Any] | None = None

    def event(self, data: dict[str, Any]) -> list[Payload]:
        kind = data.get("type")
        if kind == "thread.started":
            tid = safe_id(data.get("thread_id"))
            if tid is not None:
                self.session_id = tid  # the thread id
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
            audit = audit_summary(name, _call_input(item))
            out.append(ToolStarted(call_id=call_id, name=name, summary=audit or summary))
        status = item.get("status")
        if completed and call_id not in self._done:
            self._done.add(call_id)
            ok = status in (None, "completed")
            if itype == "command_execution":
                ok = ok and item.get("exit_code") in (0, None)
            text = summary if ok else f"the {name} call failed"
            outcome = outcome_summary(exit_code=item.get("exit_code"))
            if outcome is not None:
                text = f"{text} ({outcome})"
            if status == "declined":
                text = f"the {name} call was declined by the sandbox policy"
            out.append(ToolCompleted(call_id=call_id, name=name, ok=ok, summary=text))
        return out

    def _usage(self, usage: Any) -> None:
        # Codex reports no cost: unknown, not zero.
        names = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens")
        self.usage_payload = usage_of(usage, (*names, "reasoning_output_tokens"))

    def usage(self) -> UsageReported | None:
        return self.usage_payload

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        if not self.completed:
            return self.unfinished("ended without finishing the turn")
        output = None
        if self.output_schema is not None:
            # The answer is the last agent message as JSON; unparsable stays None for the
            # runtime to judge (and retry).
            found, value = parsed_json(self.last_text)
            output = drop_optional_nulls(value, self.output_schema) if found else None
        return self.exit_failure(exit_code) or TurnCompleted(text=self.last_text, output=output)


parse_stream = CodexStream.parse
