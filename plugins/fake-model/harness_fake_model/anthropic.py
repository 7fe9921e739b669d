"""Anthropic Messages API replies (Claude Code): a message, or its SSE stream."""

from __future__ import annotations

import json
from typing import Any

from .script import Step, Usage
from .wire import Emitter, new_id, split_text


def anthropic_message(step: Step, model: str, usage: Usage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.reasoning:
        content.append({"type": "thinking", "thinking": step.reasoning, "signature": "fake"})
    if step.text:
        content.append({"type": "text", "text": step.text})
    for c in step.tool_calls:
        args = c.arguments if not isinstance(c.arguments, str) else json.loads(c.arguments)
        content.append(
            {"type": "tool_use", "id": c.id or new_id("toolu_"), "name": c.name, "input": args}
        )
    return {
        "id": new_id("msg_"),
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


async def anthropic_stream(em: Emitter, step: Step, model: str, usage: Usage) -> None:
    msg = anthropic_message(step, model, usage)
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    await em.send("message_start", {"type": "message_start", "message": start})
    await em.send("ping", {"type": "ping"})

    async def block_start(index: int, block: dict[str, Any]) -> None:
        event = {"type": "content_block_start", "index": index, "content_block": block}
        await em.send("content_block_start", event)

    async def block_delta(index: int, delta: dict[str, Any], drop_point: bool = False) -> None:
        event = {"type": "content_block_delta", "index": index, "delta": delta}
        await em.send("content_block_delta", event, drop_point=drop_point)

    for index, block in enumerate(msg["content"]):
        if block["type"] == "thinking":
            await block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in split_text(block["thinking"]):
                await block_delta(index, {"type": "thinking_delta", "thinking": piece})
            await block_delta(index, {"type": "signature_delta", "signature": "fake"})
        elif block["type"] == "text":
            await block_start(index, {"type": "text", "text": ""})
            for piece in split_text(block["text"]):
                await block_delta(index, {"type": "text_delta", "text": piece}, drop_point=True)
        else:
            tool_use = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            await block_start(index, tool_use)
            for piece in split_text(json.dumps(block["input"])):
                delta = {"type": "input_json_delta", "partial_json": piece}
                await block_delta(index, delta, drop_point=True)
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
