"""A scripted, wire-compatible fake model server for driving real harness CLIs offline.

It speaks, streaming (SSE) and not, the three wire formats the coding-agent CLIs use:

- Anthropic Messages API: ``POST /v1/messages`` (+ ``/v1/messages/count_tokens``) -- Claude Code;
- OpenAI Responses API: ``POST /v1/responses`` -- Codex;
- OpenAI Chat Completions: ``POST /v1/chat/completions`` -- OpenCode, Pi, anything OpenAI-compatible;

plus ``GET /v1/models`` (a list in both vendors' shapes).  Every route is also served without the
``/v1`` prefix, because some clients put ``/v1`` in the base URL and some do not.

Replies come from a *script*: a list of :class:`Step` (or dicts of the same shape, or a JSON file
``{"steps": [...], "default_text": "..."}`` / ``[...]``).  A step is assistant text, tool calls,
usage figures, an HTTP error in the vendor's JSON shape, a delay, or a dropped connection.

Matching rule (so the CLIs' side requests -- title generation, quota probes, token counts --
do not eat the script): each incoming model request is compared with the *next* unconsumed step
only.  If the step's :class:`Match` accepts the request the step is consumed (``times`` counts
down) and replayed; otherwise the request gets a harmless default text reply and the step stays
queued.  A Match checks, all optional: the ``endpoint`` (``"messages"``, ``"responses"``,
``"chat"``), ``tools`` (by default True: the request offers tools -- the CLIs' side requests do
not), ``contains`` (substring of the latest user text), ``tool_result`` (whether the request ends
with a tool result) and ``model`` (substring of the model name).  When the script is exhausted
every request gets ``default_text``.  ``count_tokens`` and ``models`` never consume steps.

Every request is recorded (method, path, headers with credential values redacted, JSON body, and
which step answered it) in :attr:`FakeModelServer.requests`.

The server runs its own asyncio event loop in a daemon thread, so it works the same from sync
tests, from asyncio/trio/anyio hosts and from the command line::

    with FakeModelServer([Step(text="hi")]) as server:
        server.base_url         # http://127.0.0.1:PORT      (Anthropic-style clients)
        server.openai_base_url  # http://127.0.0.1:PORT/v1   (OpenAI-style clients)

    python -m harness_core.testing.fake_model serve --port 8765 --script script.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

__all__ = [
    "ErrorReply",
    "FakeModelServer",
    "Match",
    "RecordedRequest",
    "Step",
    "ToolCall",
    "Usage",
    "load_script",
    "main",
]

DEFAULT_TEXT = "OK."
ENDPOINTS = ("messages", "responses", "chat")
_REDACT_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "openai-organization",
    "chatgpt-account-id",
}


# --------------------------------------------------------------------------------------- script


@dataclass
class ToolCall:
    """One tool call the fake model makes.  ``name`` is the harness's own tool name (Claude
    Code ``Bash``/``Write``, Codex ``shell``/``exec_command``, OpenCode ``bash``/``write``...).
    ``arguments`` is a JSON object (or an already-encoded string; for a Responses API *custom*
    (freeform) tool such as Codex's ``apply_patch`` it is the raw input text)."""

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None


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


# ------------------------------------------------------------------------------------ recording


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    endpoint: str | None = None
    stream: bool = False
    model: str = ""
    tool_names: list[str] = field(default_factory=list)
    last_user_text: str = ""
    has_tool_result: bool = False
    step_index: int | None = None  # index in the script of the step that answered; None = default
    status: int = 200

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _redact(headers: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for k, v in headers.items():
        lk = k.lower()
        secret = lk in _REDACT_HEADERS or any(s in lk for s in ("token", "secret", "api-key"))
        out[lk] = "<redacted>" if secret else v
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") in (
                "text",
                "input_text",
                "output_text",
                None,
            ):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return "\n".join(parts)
    return ""


def _analyse(endpoint: str, body: Any) -> tuple[str, list[str], str, bool]:
    """(model, tool names, latest user text, ends-with-tool-result) of a request body."""
    if not isinstance(body, dict):
        return "", [], "", False
    model = str(body.get("model", ""))
    names = []
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else None
            name = (fn or t).get("name") or t.get("type")
            if name:
                names.append(str(name))
    user_text, tool_result = "", False
    if endpoint == "messages":
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        for m in reversed(msgs):
            if m.get("role") == "user" and _text_of(m.get("content")).strip():
                user_text = _text_of(m.get("content"))
                break
        if msgs and msgs[-1].get("role") == "user" and isinstance(msgs[-1].get("content"), list):
            tool_result = any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in msgs[-1]["content"]
            )
    elif endpoint == "chat":
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        for m in reversed(msgs):
            if m.get("role") == "user" and _text_of(m.get("content")).strip():
                user_text = _text_of(m.get("content"))
                break
        tool_result = bool(msgs) and msgs[-1].get("role") == "tool"
    elif endpoint == "responses":
        items = body.get("input")
        if isinstance(items, str):
            user_text = items
        elif isinstance(items, list):
            items = [i for i in items if isinstance(i, dict)]
            for i in reversed(items):
                if i.get("role") == "user" and _text_of(i.get("content")).strip():
                    user_text = _text_of(i.get("content"))
                    break
            if items:
                tool_result = str(items[-1].get("type", "")).endswith("_call_output")
    return model, names, user_text, tool_result


# ------------------------------------------------------------------------------- reply builders


def _ids(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _estimate_usage(step: Step, body: Any) -> Usage:
    if step.usage is not None:
        return step.usage
    out_len = len(step.text or "") + sum(len(json.dumps(c.arguments)) for c in step.tool_calls)
    return Usage(
        input_tokens=max(1, len(json.dumps(body)) // 4), output_tokens=max(1, out_len // 4)
    )


def _args_text(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _chunks(text: str, n: int = 3) -> list[str]:
    """Split text in up to n pieces so streams carry several deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


_ANTHROPIC_ERR = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERR = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def _error_body(endpoint: str | None, err: ErrorReply) -> dict[str, Any]:
    if endpoint == "messages":
        etype = err.type or _ANTHROPIC_ERR.get(err.status, "api_error")
        return {"type": "error", "error": {"type": etype, "message": err.message}}
    etype, code = _OPENAI_ERR.get(err.status, ("server_error", None))
    return {
        "error": {
            "message": err.message,
            "type": err.type or etype,
            "param": None,
            "code": err.code if err.code is not None else code,
        }
    }


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _Dropped(Exception):
    pass


class _Emitter:
    """Writes SSE events; raises _Dropped at the drop point when the step asks for it."""

    def __init__(self, resp: web.StreamResponse, request: web.Request, drop: bool) -> None:
        self.resp, self.request, self.drop = resp, request, drop

    async def send(self, event: str | None, data: Any, *, drop_point: bool = False) -> None:
        await self.resp.write(_sse(event, data))
        if drop_point and self.drop:
            await asyncio.sleep(0.05)
            if self.request.transport is not None:
                self.request.transport.abort()
            raise _Dropped


# Anthropic Messages ------------------------------------------------------------------------


def _anthropic_message(step: Step, model: str, usage: Usage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.reasoning:
        content.append({"type": "thinking", "thinking": step.reasoning, "signature": "fake"})
    if step.text:
        content.append({"type": "text", "text": step.text})
    for c in step.tool_calls:
        args = c.arguments if not isinstance(c.arguments, str) else json.loads(c.arguments)
        content.append(
            {"type": "tool_use", "id": c.id or _ids("toolu_"), "name": c.name, "input": args}
        )
    return {
        "id": _ids("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if step.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "output_tokens": usage.output_tokens,
        },
    }


async def _anthropic_stream(em: _Emitter, step: Step, model: str, usage: Usage) -> None:
    msg = _anthropic_message(step, model, usage)
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    await em.send("message_start", {"type": "message_start", "message": start})
    await em.send("ping", {"type": "ping"})
    for index, block in enumerate(msg["content"]):
        if block["type"] == "thinking":
            await em.send(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in _chunks(block["thinking"]):
                await em.send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                )
            await em.send(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": "fake"},
                },
            )
        elif block["type"] == "text":
            await em.send(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _chunks(block["text"]):
                await em.send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    drop_point=True,
                )
        else:
            await em.send(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
            for piece in _chunks(json.dumps(block["input"])):
                await em.send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                    drop_point=True,
                )
        await em.send("content_block_stop", {"type": "content_block_stop", "index": index})
    await em.send(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        },
        drop_point=True,
    )
    await em.send("message_stop", {"type": "message_stop"})


# OpenAI Responses --------------------------------------------------------------------------


def _responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens + usage.cache_read_input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.cache_read_input_tokens + usage.output_tokens,
    }


def _responses_items(step: Step, custom_tools: set[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.reasoning:
        items.append(
            {
                "id": _ids("rs_"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": step.reasoning}],
            }
        )
    if step.text:
        items.append(
            {
                "id": _ids("msg_"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    for c in step.tool_calls:
        call_id = c.id or _ids("call_")
        if c.name in custom_tools:
            items.append(
                {
                    "id": _ids("ctc_"),
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": c.name,
                    "input": c.arguments
                    if isinstance(c.arguments, str)
                    else json.dumps(c.arguments),
                }
            )
        else:
            items.append(
                {
                    "id": _ids("fc_"),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": c.name,
                    "arguments": _args_text(c),
                }
            )
    return items


def _response_obj(
    rid: str, model: str, status: str, output: list[Any], usage: Any
) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": usage,
        "error": None,
        "incomplete_details": None,
    }


async def _responses_stream(
    em: _Emitter, step: Step, model: str, usage: Usage, custom_tools: set[str]
) -> None:
    seq = itertools.count()
    rid = _ids("resp_")
    items = _responses_items(step, custom_tools)

    async def send(etype: str, drop_point: bool = False, **fields: Any) -> None:
        await em.send(
            etype, {"type": etype, "sequence_number": next(seq), **fields}, drop_point=drop_point
        )

    await send("response.created", response=_response_obj(rid, model, "in_progress", [], None))
    await send("response.in_progress", response=_response_obj(rid, model, "in_progress", [], None))
    for idx, item in enumerate(items):
        iid = item["id"]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            added = dict(item, status="in_progress", content=[])
            await send("response.output_item.added", output_index=idx, item=added)
            part = {"type": "output_text", "text": "", "annotations": []}
            await send(
                "response.content_part.added",
                item_id=iid,
                output_index=idx,
                content_index=0,
                part=part,
            )
            for piece in _chunks(text):
                await send(
                    "response.output_text.delta",
                    drop_point=True,
                    item_id=iid,
                    output_index=idx,
                    content_index=0,
                    delta=piece,
                )
            await send(
                "response.output_text.done",
                item_id=iid,
                output_index=idx,
                content_index=0,
                text=text,
            )
            await send(
                "response.content_part.done",
                item_id=iid,
                output_index=idx,
                content_index=0,
                part=dict(part, text=text),
            )
        elif item["type"] == "function_call":
            await send(
                "response.output_item.added",
                output_index=idx,
                item=dict(item, status="in_progress", arguments=""),
            )
            for piece in _chunks(item["arguments"]):
                await send(
                    "response.function_call_arguments.delta",
                    drop_point=True,
                    item_id=iid,
                    output_index=idx,
                    delta=piece,
                )
            await send(
                "response.function_call_arguments.done",
                item_id=iid,
                output_index=idx,
                arguments=item["arguments"],
            )
        elif item["type"] == "custom_tool_call":
            await send(
                "response.output_item.added",
                output_index=idx,
                item=dict(item, status="in_progress", input=""),
            )
            for piece in _chunks(item["input"]):
                await send(
                    "response.custom_tool_call_input.delta",
                    drop_point=True,
                    item_id=iid,
                    output_index=idx,
                    delta=piece,
                )
            await send(
                "response.custom_tool_call_input.done",
                item_id=iid,
                output_index=idx,
                input=item["input"],
            )
        else:  # reasoning
            await send("response.output_item.added", output_index=idx, item=dict(item, summary=[]))
            await send(
                "response.reasoning_summary_text.delta",
                item_id=iid,
                output_index=idx,
                summary_index=0,
                delta=item["summary"][0]["text"],
            )
        await send("response.output_item.done", output_index=idx, item=item)
    await send(
        "response.completed",
        drop_point=True,
        response=_response_obj(rid, model, "completed", items, _responses_usage(usage)),
    )


# Chat Completions --------------------------------------------------------------------------


def _chat_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _chat_tool_calls(step: Step) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id or _ids("call_"),
            "type": "function",
            "function": {"name": c.name, "arguments": _args_text(c)},
        }
        for c in step.tool_calls
    ]


async def _chat_stream(
    em: _Emitter, step: Step, model: str, usage: Usage, include_usage: bool
) -> None:
    cid, created = _ids("chatcmpl-"), int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    await em.send(None, chunk({"role": "assistant", "content": ""}))
    if step.reasoning:
        await em.send(None, chunk({"reasoning_content": step.reasoning}))
    for piece in _chunks(step.text or ""):
        await em.send(None, chunk({"content": piece}), drop_point=True)
    for i, call in enumerate(_chat_tool_calls(step)):
        head = {"index": i, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        await em.send(None, chunk({"tool_calls": [head]}))
        for piece in _chunks(call["function"]["arguments"]):
            await em.send(
                None,
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                drop_point=True,
            )
    await em.send(None, chunk({}, "tool_calls" if step.tool_calls else "stop"), drop_point=True)
    if include_usage:
        await em.send(
            None,
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _chat_usage(usage),
            },
        )
    await em.send(None, "[DONE]")


# --------------------------------------------------------------------------------------- server


class FakeModelServer:
    """Scripted model server on 127.0.0.1, on its own event loop in a background thread."""

    def __init__(
        self,
        script: Iterable[ScriptItem] | Mapping[str, Any] | str | Path = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default_text: str | None = None,
        models: Sequence[str] = ("fake-model", "claude-sonnet-4-5", "gpt-5"),
        record_file: str | Path | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.models = list(models)
        self._record_file = Path(record_file) if record_file else None
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._new_request = threading.Condition(self._lock)
        self.set_script(script, default_text=default_text)

    # -- script ------------------------------------------------------------------------------
    def set_script(
        self,
        script: Iterable[ScriptItem] | Mapping[str, Any] | str | Path,
        *,
        default_text: str | None = None,
    ) -> None:
        """Replace the script (e.g. between turns of a test)."""
        src = script if isinstance(script, (str, Path, Mapping)) else list(script)
        steps, dflt = load_script(src)
        with self._lock:
            self._steps = steps
            self._remaining = [s.times if isinstance(s, Step) else 1 for s in steps]
            self._cursor = 0
            self.default_text = default_text if default_text is not None else dflt

    @property
    def steps_remaining(self) -> int:
        with self._lock:
            return len(self._steps) - self._cursor

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def start(self) -> FakeModelServer:
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
                # Handlers still sleeping on a scripted delay: cancel and await them so the
                # loop closes without "Task was destroyed but it is pending" noise.
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-model-server", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            self._thread = None
            raise failure[0]
        return self

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._runner is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop)
            with contextlib.suppress(Exception):
                fut.result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._thread = self._loop = self._runner = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- recording -----------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    def model_requests(self, endpoint: str | None = None) -> list[RecordedRequest]:
        """Recorded model calls (messages/responses/chat), optionally of one endpoint."""
        return [
            r
            for r in self.requests
            if r.endpoint in ENDPOINTS and (endpoint is None or r.endpoint == endpoint)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests were recorded (or raise TimeoutError)."""
        deadline = time.monotonic() + timeout
        with self._new_request:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{len(self._requests)} of {count} requests after {timeout}s"
                    )
                self._new_request.wait(left)
            return list(self._requests)

    def _record(self, rec: RecordedRequest) -> None:
        with self._new_request:
            self._requests.append(rec)
            self._new_request.notify_all()
        if self._record_file is not None:
            with self._record_file.open("a") as f:
                f.write(json.dumps(rec.to_dict()) + "\n")

    # -- dispatch ------------------------------------------------------------------------------
    def _next_step(self, rec: RecordedRequest) -> tuple[int | None, Step | None]:
        with self._lock:
            while self._cursor < len(self._steps):
                idx = self._cursor
                item = self._steps[idx]
                if isinstance(item, Step):
                    if not item.match.accepts(rec):
                        return None, None
                    step: Step | None = item
                else:
                    step = item(rec)
                    if step is None:
                        return None, None
                    if isinstance(step, Mapping):
                        step = Step.from_dict(step)
                left = self._remaining[idx]
                if left is not None:
                    left -= 1
                    self._remaining[idx] = left
                    if left <= 0:
                        self._cursor += 1
                return idx, step
            return None, None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        route = path[3:] if path.startswith("/v1/") else path
        body: Any = None
        raw = await request.read()
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        endpoint = {
            "/messages": "messages",
            "/responses": "responses",
            "/chat/completions": "chat",
            "/messages/count_tokens": "count_tokens",
        }.get(route.rstrip("/"))
        if request.method == "GET" and route.rstrip("/") == "/models":
            endpoint = "models"
        rec = RecordedRequest(
            method=request.method,
            path=path,
            headers=_redact(request.headers),
            body=body,
            time=time.time(),
            endpoint=endpoint,
        )
        if endpoint in ENDPOINTS:
            rec.model, rec.tool_names, rec.last_user_text, rec.has_tool_result = _analyse(
                endpoint, body
            )
            rec.stream = bool(isinstance(body, dict) and body.get("stream"))
        if endpoint in ENDPOINTS and request.method != "POST":
            endpoint = None
        if endpoint in ENDPOINTS:
            idx, step = self._next_step(rec)
            rec.step_index = idx
        self._record(rec)

        if endpoint == "models":
            return web.json_response(self._models_body())
        if endpoint == "count_tokens":
            n = max(1, len(raw) // 4)
            return web.json_response({"input_tokens": n})
        if endpoint not in ENDPOINTS:
            rec.status = 404
            return web.json_response(
                {
                    "type": "error",
                    "error": {
                        "type": "not_found_error",
                        "message": f"fake model server: no route {request.method} {path}",
                    },
                },
                status=404,
            )
        if step is None:
            step = Step(text=self.default_text)
        return await self._reply(request, rec, step, body if isinstance(body, dict) else {})

    def _models_body(self) -> dict[str, Any]:
        data = [
            {
                "id": m,
                "object": "model",
                "type": "model",
                "created": 1700000000,
                "created_at": "2025-01-01T00:00:00Z",
                "owned_by": "fake",
                "display_name": m,
            }
            for m in self.models
        ]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": self.models[0] if self.models else None,
            "last_id": self.models[-1] if self.models else None,
            "models": data,
        }

    async def _reply(
        self, request: web.Request, rec: RecordedRequest, step: Step, body: dict[str, Any]
    ) -> web.StreamResponse:
        if step.delay:
            await asyncio.sleep(step.delay)
        endpoint = rec.endpoint
        if step.error is not None:
            rec.status = step.error.status
            headers = {}
            if step.error.retry_after is not None:
                headers["retry-after"] = str(step.error.retry_after)
            return web.json_response(
                _error_body(endpoint, step.error), status=step.error.status, headers=headers
            )
        if step.drop and not rec.stream:
            if request.transport is not None:
                request.transport.abort()
            raise ConnectionResetError("fake model server: scripted drop")
        model = rec.model or "fake-model"
        usage = _estimate_usage(step, body)
        custom_tools = {
            str(t.get("name"))
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "custom"
        }
        headers = {"request-id": _ids("req_"), "x-request-id": _ids("req_")}
        if not rec.stream:
            if endpoint == "messages":
                payload = _anthropic_message(step, model, usage)
            elif endpoint == "responses":
                items = _responses_items(step, custom_tools)
                payload = _response_obj(
                    _ids("resp_"), model, "completed", items, _responses_usage(usage)
                )
                payload["output_text"] = step.text or ""
            else:
                message: dict[str, Any] = {"role": "assistant", "content": step.text}
                if step.tool_calls:
                    message["tool_calls"] = _chat_tool_calls(step)
                payload = {
                    "id": _ids("chatcmpl-"),
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if step.tool_calls else "stop",
                        }
                    ],
                    "usage": _chat_usage(usage),
                }
            return web.json_response(payload, headers=headers)

        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                **headers,
            }
        )
        await resp.prepare(request)
        em = _Emitter(resp, request, step.drop)
        try:
            if endpoint == "messages":
                await _anthropic_stream(em, step, model, usage)
            elif endpoint == "responses":
                await _responses_stream(em, step, model, usage, custom_tools)
            else:
                opts = body.get("stream_options") or {}
                await _chat_stream(
                    em, step, model, usage, include_usage=opts.get("include_usage", True)
                )
        except (_Dropped, ConnectionResetError):
            return resp
        await resp.write_eof()
        return resp


# ------------------------------------------------------------------------------------------ CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``harness fake-model serve --port P --script FILE``: serve until interrupted."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        args = args[1:]
    parser = argparse.ArgumentParser(
        prog="harness fake-model serve",
        description="Serve a scripted fake model (Anthropic Messages, OpenAI Responses and "
        "Chat Completions APIs) on 127.0.0.1.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port (default)")
    parser.add_argument("--script", help="JSON script: a list of steps or {steps, default_text}")
    parser.add_argument("--default-text", default=None)
    parser.add_argument("--record", help="append every request as JSON lines to this file")
    ns = parser.parse_args(args)
    server = FakeModelServer(
        ns.script or (),
        host=ns.host,
        port=ns.port,
        default_text=ns.default_text,
        record_file=ns.record,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server:
            print(f"fake model server listening on {server.base_url}", flush=True)
            while not stop.wait(0.5):
                pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
