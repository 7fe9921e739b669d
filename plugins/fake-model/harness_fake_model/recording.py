"""What the server records of each request: redacted headers, body, and what the matcher reads (model, tools, latest user text, tool result)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

REDACT_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "openai-organization",
    "chatgpt-account-id",
}


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


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for k, v in headers.items():
        lk = k.lower()
        secret = lk in REDACT_HEADERS or any(s in lk for s in ("token", "secret", "api-key"))
        out[lk] = "<redacted>" if secret else v
    return out


def text_of(content: Any) -> str:
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


def analyse(endpoint: str, body: Any) -> tuple[str, list[str], str, bool]:
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
            if m.get("role") == "user" and text_of(m.get("content")).strip():
                user_text = text_of(m.get("content"))
                break
        if msgs and msgs[-1].get("role") == "user" and isinstance(msgs[-1].get("content"), list):
            tool_result = any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in msgs[-1]["content"]
            )
    elif endpoint == "chat":
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        for m in reversed(msgs):
            if m.get("role") == "user" and text_of(m.get("content")).strip():
                user_text = text_of(m.get("content"))
                break
        tool_result = bool(msgs) and msgs[-1].get("role") == "tool"
    elif endpoint == "responses":
        items = body.get("input")
        if isinstance(items, str):
            user_text = items
        elif isinstance(items, list):
            items = [i for i in items if isinstance(i, dict)]
            for i in reversed(items):
                if i.get("role") == "user" and text_of(i.get("content")).strip():
                    user_text = text_of(i.get("content"))
                    break
            if items:
                tool_result = str(items[-1].get("type", "")).endswith("_call_output")
    return model, names, user_text, tool_result
