"""Shared reply pieces: ids, usage estimates, vendor error bodies, SSE framing and the drop point."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import web

from .script import ErrorReply, Step, ToolCall, Usage


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def estimate_usage(step: Step, body: Any) -> Usage:
    if step.usage is not None:
        return step.usage
    out_len = len(step.text or "") + sum(len(json.dumps(c.arguments)) for c in step.tool_calls)
    return Usage(
        input_tokens=max(1, len(json.dumps(body)) // 4), output_tokens=max(1, out_len // 4)
    )


def arguments_text(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def split_text(text: str, n: int = 3) -> list[str]:
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


def error_body(endpoint: str | None, err: ErrorReply) -> dict[str, Any]:
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


def sse_event(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class Dropped(Exception):
    pass


class Emitter:
    """Writes SSE events; raises Dropped at the drop point when the step asks for it."""

    def __init__(self, resp: web.StreamResponse, request: web.Request, drop: bool) -> None:
        self.resp, self.request, self.drop = resp, request, drop

    async def send(self, event: str | None, data: Any, *, drop_point: bool = False) -> None:
        await self.resp.write(sse_event(event, data))
        if drop_point and self.drop:
            await asyncio.sleep(0.05)
            if self.request.transport is not None:
                self.request.transport.abort()
            raise Dropped
