"""OpenAI Responses API replies (Codex): a response object, or its SSE stream."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from .script import Step, Usage
from .wire import Emitter, arguments_text, new_id, split_text

# Tool-call items streamed piecewise: the field that carries the call, and its event prefix.
STREAMED_CALLS = {
    "function_call": ("arguments", "response.function_call_arguments"),
    "custom_tool_call": ("input", "response.custom_tool_call_input"),
}


def responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens + usage.cache_read_input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.cache_read_input_tokens + usage.output_tokens,
    }


def responses_items(step: Step, custom_tools: set[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.reasoning:
        items.append(
            {
                "id": new_id("rs_"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": step.reasoning}],
            }
        )
    if step.text:
        items.append(
            {
                "id": new_id("msg_"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    for c in step.tool_calls:
        call_id = c.id or new_id("call_")
        if c.name in custom_tools:
            items.append(
                {
                    "id": new_id("ctc_"),
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
            item = {
                "id": new_id("fc_"),
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": c.name,
                "arguments": arguments_text(c),
            }
            if c.namespace:
                item["namespace"] = c.namespace
            items.append(item)
    return items


def response_object(
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


async def responses_stream(
    em: Emitter, step: Step, model: str, usage: Usage, custom_tools: set[str]
) -> None:
    seq = itertools.count()
    rid = new_id("resp_")
    items = responses_items(step, custom_tools)

    async def send(etype: str, drop_point: bool = False, **fields: Any) -> None:
        await em.send(
            etype, {"type": etype, "sequence_number": next(seq), **fields}, drop_point=drop_point
        )

    await send("response.created", response=response_object(rid, model, "in_progress", [], None))
    await send(
        "response.in_progress", response=response_object(rid, model, "in_progress", [], None)
    )
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
            for piece in split_text(text):
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
        elif item["type"] in STREAMED_CALLS:
            key, events = STREAMED_CALLS[item["type"]]
            await send(
                "response.output_item.added",
                output_index=idx,
                item=dict(item, status="in_progress", **{key: ""}),
            )
            for piece in split_text(item[key]):
                await send(
                    f"{events}.delta", drop_point=True, item_id=iid, output_index=idx, delta=piece
                )
            await send(f"{events}.done", item_id=iid, output_index=idx, **{key: item[key]})
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
        response=response_object(rid, model, "completed", items, responses_usage(usage)),
    )
