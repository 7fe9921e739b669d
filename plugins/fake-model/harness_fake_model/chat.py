"""OpenAI Chat Completions replies (OpenCode, Pi, anything OpenAI-compatible)."""

from __future__ import annotations

import time
from typing import Any

from .script import Step, Usage
from .wire import Emitter, arguments_text, new_id, split_text


def chat_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def chat_tool_calls(step: Step) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id or new_id("call_"),
            "type": "function",
            "function": {"name": c.name, "arguments": arguments_text(c)},
        }
        for c in step.tool_calls
    ]


async def chat_stream(
    em: Emitter, step: Step, model: str, usage: Usage, include_usage: bool
) -> None:
    cid, created = new_id("chatcmpl-"), int(time.time())

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
    for piece in split_text(step.text or ""):
        await em.send(None, chunk({"content": piece}), drop_point=True)
    for i, call in enumerate(chat_tool_calls(step)):
        head = {"index": i, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        await em.send(None, chunk({"tool_calls": [head]}))
        for piece in split_text(call["function"]["arguments"]):
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
                "usage": chat_usage(usage),
            },
        )
    await em.send(None, "[DONE]")
