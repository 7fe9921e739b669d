"""``opencode serve`` events of one session -> contract payloads (pure: no I/O).

The server's ``GET /event`` stream carries every session's bus events; :class:`ServeEvents`
keeps the turn's own (its ``sessionID``, not a sub-agent's) and maps them:

- ``message.part.delta`` of an assistant text part -> ``message.delta``; the step's finished text
  parts -> ``message.completed`` at its ``step-finish`` part (whose tokens and cost are summed
  into one ``usage``);
- a ``tool`` part -> ``tool.started`` (once it runs, with the audit line of its input) and
  ``tool.completed`` (completed or error);
- ``permission.asked`` -> kept for the driver to ask the host (:meth:`ServeEvents.take_asks`);
- ``session.idle`` after the prompt made it busy -> :attr:`ServeEvents.idle`.

The ``POST /session/{id}/message`` reply (the last assistant message) ends the turn
(:meth:`ServeEvents.ending`). Errors are classified from OpenCode's error objects; their text is
never forwarded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness_cli_kit import ModelSteps, Thinking, positive_cost, safe_id, safe_name, usage_report
from harness_cli_kit.calls import audit_summary, outcome_summary, permission_request
from harness_cli_kit.classify import reason_from
from harness_cli_kit.tools import SHELL_AND_FILES, ToolCalls, call_id_of
from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    PermissionRequest,
    TurnCompleted,
    TurnFailed,
    Usage,
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
    "StructuredOutput": "gave the structured answer",
}
#: The error OpenCode ends a ``format: json_schema`` prompt with when the model answered in text.
STRUCTURED_MISSING = "StructuredOutputError"

_UNREACHABLE = re.compile(r"connect|ECONNREFUSED|ENOTFOUND|fetch failed", re.I)
_TOKENS = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("reasoning_tokens", "reasoning"),
)


def classify(error: Mapping[str, Any] | None) -> str:
    """Map an OpenCode error object to a fixed reason (never forwarding its text)."""
    if not isinstance(error, Mapping):
        return "provider-failed"
    name = str(error.get("name") or "")
    data = error.get("data") if isinstance(error.get("data"), Mapping) else {}
    status = data.get("statusCode") if isinstance(data, Mapping) else None
    message = str(data.get("message") or "") if isinstance(data, Mapping) else ""
    if name == "ProviderAuthError":
        return "authentication-required"
    return reason_from(status, message, unreachable=_UNREACHABLE)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return int(value) if ok else None


class ServeEvents:
    """The payloads of one turn of OpenCode session ``session_id`` (pure: no I/O)."""

    def __init__(self, session_id: str, *, structured: bool = False) -> None:
        self.session_id = session_id
        #: The prompt carried ``format: json_schema``: the answer is the reply's ``structured``.
        self.structured = structured
        self.steps = 0
        self.busy = False
        #: The session went idle after the prompt made it busy (its events are all out).
        self.idle = False
        #: A classified ``session.error`` (the reply's own error takes precedence).
        self.error: str | None = None
        self.last_text: str | None = None
        self._tools = ToolCalls(TOOL_SUMMARIES)
        self._users: set[str] = set()
        self._text_parts: set[str] = set()
        self._step_text: dict[str, str] = {}
        self._finished: set[str] = set()
        self._calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self._asks: list[Mapping[str, Any]] = []
        self._usage: dict[str, int] = {}
        self._cost = 0.0
        #: ``step-start`` / ``step-finish`` parts bound each model call
        self.model_steps = ModelSteps()
        self._started_steps: set[str] = set()
        self._reasoning: dict[str, Thinking] = {}
        self._reasoned: set[str] = set()

    # -- the event stream ---------------------------------------------------------------------

    def event(self, data: Mapping[str, Any]) -> list[Payload]:
        kind = data.get("type")
        props = _mapping(data.get("properties"))
        if props.get("sessionID") != self.session_id:
            return []
        if kind == "message.part.updated":
            return self.part(_mapping(props.get("part")))
        if kind == "message.part.delta":
            return self._delta(props)
        if kind == "message.updated":
            info = _mapping(props.get("info"))
            if info.get("role") == "user" and isinstance(info.get("id"), str):
                self._users.add(info["id"])
        elif kind == "permission.asked":
            self._asks.append(props)
        elif kind == "session.status":
            self.busy = self.busy or _mapping(props.get("status")).get("type") == "busy"
        elif kind == "session.idle":
            self.idle = self.busy
        elif kind == "session.error":
            self.error = classify(_mapping(props.get("error")))
        return []

    def part(self, part: Mapping[str, Any]) -> list[Payload]:
        """One message part (from the stream, or the reply's parts: each is mapped once)."""
        message_id = part.get("messageID")
        if isinstance(message_id, str) and message_id in self._users:
            return []
        kind = part.get("type")
        part_id = part.get("id")
        if not isinstance(part_id, str):
            return []
        if kind == "text":
            self._text_parts.add(part_id)
            text = part.get("text")
            if isinstance(text, str) and text and _mapping(part.get("time")).get("end"):
                self._step_text[part_id] = text
        elif kind == "tool":
            return self._tool(part)
        elif kind == "reasoning":
            return self._reasoning_part(part_id, part)
        elif kind == "step-start" and part_id not in self._started_steps:
            self._started_steps.add(part_id)
            return self.model_steps.requested()
        elif kind == "step-finish" and part_id not in self._finished:
            self._finished.add(part_id)
            return self._step_finish(part)
        return []

    def _delta(self, props: Mapping[str, Any]) -> list[Payload]:
        delta = props.get("delta")
        part_id = props.get("partID")  # an id from the stream may be any JSON value
        if not isinstance(part_id, str) or props.get("field") != "text":
            return []
        thinking = self._reasoning.get(part_id)
        if thinking is not None and part_id not in self._reasoned:
            return thinking.delta(delta)
        if part_id not in self._text_parts:
            return []
        return [MessageDelta(text=delta)] if isinstance(delta, str) and delta else []

    def _reasoning_part(self, part_id: str, part: Mapping[str, Any]) -> list[Payload]:
        """A reasoning part: its deltas stream as thinking; once it has ended, its text is
        the block (said once; one that came whole is its own one piece)."""
        thinking = self._reasoning.setdefault(part_id, Thinking())
        text = part.get("text")
        if part_id in self._reasoned or not _mapping(part.get("time")).get("end"):
            return []
        self._reasoned.add(part_id)
        if isinstance(text, str) and text and not thinking.streaming:
            return [*thinking.delta(text), *thinking.completed()]
        return thinking.completed(text)

    def _tool(self, part: Mapping[str, Any]) -> list[Payload]:
        call_id = call_id_of(part.get("callID"))
        if call_id is None:
            return []
        name = safe_name(part.get("tool"))
        state = _mapping(part.get("state"))
        status = state.get("status")
        if status == "pending":  # no input yet: started once it runs
            return []
        arguments = _mapping(state.get("input"))
        self._calls[call_id] = (name, arguments)
        out = self._tools.start(call_id, name, audit_summary(name, arguments))
        if status in ("completed", "error"):
            ok = status == "completed"
            exit_code = _mapping(state.get("metadata")).get("exit")
            outcome = outcome_summary(exit_code=exit_code)
            summary = f"{self._tools.summary(name)} ({outcome})" if outcome else None
            out += self._tools.finish(call_id, name, ok, summary)
        return out

    def _step_finish(self, part: Mapping[str, Any]) -> list[Payload]:
        self.steps += 1
        tokens = _mapping(part.get("tokens"))
        cache = _mapping(tokens.get("cache"))
        counts = {field: _count(tokens.get(key)) for field, key in _TOKENS}
        counts["cache_read_tokens"] = _count(cache.get("read"))
        counts["cache_write_tokens"] = _count(cache.get("write"))
        for field, value in counts.items():
            if value is not None:
                self._usage[field] = self._usage.get(field, 0) + value
        self._cost += positive_cost(part.get("cost")) or 0.0
        known = {field: value for field, value in counts.items() if value is not None}
        step = self.model_steps.completed(Usage(**known) if known else None)
        if not self._step_text:
            return step
        self.last_text = "".join(self._step_text.values())
        self._step_text = {}
        return [MessageCompleted(text=self.last_text), *step]

    # -- permissions --------------------------------------------------------------------------

    def take_asks(self) -> list[Mapping[str, Any]]:
        """The ``permission.asked`` requests not handed out yet."""
        asks, self._asks = self._asks, []
        return asks

    def permission(self, ask: Mapping[str, Any]) -> tuple[PermissionRequest, str | None]:
        """The host's request for an ask, and the tool call it belongs to. An ask names its
        call; the call's own input (the command, the file) is what the host and the command
        policy read, whatever the permission is (``bash``, ``edit``, ``external_directory``)."""
        call_id = call_id_of(_mapping(ask.get("tool")).get("callID"))
        name, arguments = self._calls.get(call_id or "", (None, None))
        if arguments is None:  # the call's part not seen: what the ask itself says
            metadata = dict(_mapping(ask.get("metadata")))
            if isinstance(metadata.get("filepath"), str):
                metadata.setdefault("filePath", metadata["filepath"])
            name, arguments = safe_name(ask.get("permission"), "permission"), metadata
        request = permission_request(name or "tool", arguments, request_id=safe_id(ask.get("id")))
        return request, call_id

    # -- the end ------------------------------------------------------------------------------

    def usage(self) -> UsageReported | None:
        return usage_report(
            dict(self._usage),
            requests=self.steps or None,
            # OpenCode reports 0 when the model has no configured price: unknown, not free.
            cost_usd=self._cost if self._cost > 0 else None,
        )

    def ending(self, reply: Mapping[str, Any]) -> list[Payload]:
        """What the prompt's reply (``{"info": AssistantMessage, "parts": [...]}``) ends the
        turn with: parts the stream missed, the usage, the terminal."""
        out: list[Payload] = []
        parts = reply.get("parts")
        for part in parts if isinstance(parts, list) else []:
            out += self.part(_mapping(part))
        usage = self.usage()
        return [*out, *([usage] if usage is not None else []), self.terminal(reply)]

    def terminal(self, reply: Mapping[str, Any]) -> Payload:
        info = _mapping(reply.get("info"))
        error = info.get("error")
        if isinstance(error, Mapping):
            if self.structured and error.get("name") == STRUCTURED_MISSING:
                # answered in text: the runtime judges the text and retries
                return TurnCompleted(text=self.last_text)
            return TurnFailed(reason=classify(error), hint="opencode reported a model error")
        if self.error is not None:
            return TurnFailed(reason=self.error, hint="opencode reported a model error")
        if self.steps == 0:
            return TurnFailed(reason="provider-failed", hint="opencode finished no model step")
        output = info.get("structured") if self.structured else None
        return TurnCompleted(text=self.last_text, output=output)


def parse_events(
    events: list[Mapping[str, Any]], reply: Mapping[str, Any], session_id: str
) -> list[Payload]:
    """Map a captured stream and its reply (for tests and tooling)."""
    mapper = ServeEvents(session_id)
    out: list[Payload] = []
    for data in events:
        out += mapper.event(data)
    return [*out, *mapper.ending(reply)]
