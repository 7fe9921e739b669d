"""The script: what the fake model answers (steps, their match rules) and how a script loads."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .recording import RecordedRequest

DEFAULT_TEXT = "OK."
ENDPOINTS = ("messages", "responses", "chat")


@dataclass
class ToolCall:
    """One tool call the fake model makes.  ``name`` is the harness's own tool name (Claude
    Code ``Bash``/``Write``, Codex ``shell``/``exec_command``, OpenCode ``bash``/``write``...).
    ``arguments`` is a JSON object (or an already-encoded string; for a Responses API *custom*
    (freeform) tool such as Codex's ``apply_patch`` it is the raw input text).
    ``namespace``: the Responses API ``function_call`` item's ``namespace`` (Codex runs an MCP
    tool only from a call that names its server's namespace, ``mcp__<server>``).
    ``mcp_server``: ``name`` is a tool of that MCP server; the reply names it the way the
    requesting CLI offered it (see :mod:`.mcp`), so one script drives every harness."""

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None
    namespace: str | None = None
    mcp_server: str | None = None


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class ErrorReply:
    """An HTTP error in the vendor's JSON shape (``type``/``code`` default by status)."""

    status: int = 500
    message: str = "fake model error"
    type: str | None = None
    code: str | None = None
    retry_after: float | None = None


@dataclass
class Match:
    """Which requests a step answers.  ``None`` means "don't care"."""

    endpoint: str | None = None
    tools: bool | None = True
    contains: str | None = None
    tool_result: bool | None = None
    model: str | None = None

    def accepts(self, req: RecordedRequest) -> bool:
        if self.endpoint is not None and req.endpoint != self.endpoint:
            return False
        if self.tools is not None and bool(req.tool_names) != self.tools:
            return False
        if self.contains is not None and self.contains not in req.last_user_text:
            return False
        if self.tool_result is not None and req.has_tool_result != self.tool_result:
            return False
        return self.model is None or self.model in req.model


@dataclass
class Step:
    """One scripted model reply.

    ``text`` and ``tool_calls`` make a normal reply (text first, then the calls; the stop reason is
    tool use when there are calls).  ``error`` replies with an HTTP error instead.  ``delay`` waits
    that many seconds before replying.  ``drop`` (streaming: after the first text delta /
    non-streaming: before any byte) closes the connection without finishing.  ``times`` is how many
    requests this step answers before the next one is used (``None`` = forever).
    """

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    error: ErrorReply | None = None
    delay: float = 0.0
    drop: bool = False
    times: int | None = 1
    match: Match = field(default_factory=Match)
    reasoning: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        data = dict(data)
        unknown = set(data) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise ValueError(f"unknown step keys: {sorted(unknown)}")
        calls = []
        for c in data.pop("tool_calls", None) or []:
            calls.append(c if isinstance(c, ToolCall) else ToolCall(**c))
        usage = data.pop("usage", None)
        error = data.pop("error", None)
        match = data.pop("match", None)
        if isinstance(error, int):
            error = {"status": error}
        return cls(
            tool_calls=calls,
            usage=usage if usage is None or isinstance(usage, Usage) else Usage(**usage),
            error=error if error is None or isinstance(error, ErrorReply) else ErrorReply(**error),
            match=match
            if isinstance(match, Match)
            else Match(**({"tools": None} if match == "any" else (match or {}))),
            **data,
        )


#: A script item computed per request: the step to answer with, or None (the default reply;
#: the cursor stays). It answers one request, or as many as its ``times`` attribute says
#: (``times = None``: forever, like a Step's).
Responder = Callable[["RecordedRequest"], "Step | None"]
ScriptItem = Step | Mapping[str, Any] | Responder


def load_script(source: str | Path | Sequence[Any] | Mapping[str, Any]) -> tuple[list[Any], str]:
    """Return ``(steps, default_text)`` from a path to a JSON file, a JSON-ish dict or a list."""
    default_text = DEFAULT_TEXT
    data: Any = source
    if isinstance(data, (str, Path)):
        data = json.loads(Path(data).read_text())
    if isinstance(data, Mapping):
        default_text = data.get("default_text", default_text)
        data = data.get("steps", [])
    steps: list[Any] = []
    for item in data:
        if isinstance(item, Mapping):
            steps.append(Step.from_dict(item))
        elif isinstance(item, Step) or callable(item):
            steps.append(item)
        else:
            raise TypeError(f"not a script step: {item!r}")
    return steps, default_text
