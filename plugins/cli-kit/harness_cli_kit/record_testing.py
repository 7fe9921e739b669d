"""The full record against a real CLI and the fake model: thinking (recorded in order,
redacted, or kept out of the ledger) and model steps (one ``model.completed`` per model call,
their usage summing to the turn's). Each adapter's suite calls :func:`reasoning_turns` with its
``cli`` fixture, a tool call its CLI runs and the secret its fixture injects."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from .testing import CliUnderTest

#: What the model "thinks" in the first step: the injected key, which must be redacted.
FIRST_THOUGHT = "First I check the key {secret} before I run it."
LAST_THOUGHT = "Now I can answer."
ANSWER = "All done."
#: The steps' usage (input, output): the turn's usage is their sum.
STEP_USAGE = ((100, 10), (120, 12), (150, 15))


def reasoning_script(tool_call: Any, secret: str, *, steps: int = 3) -> list[Any]:
    """``steps`` model calls, each with reasoning: ``steps - 1`` running ``tool_call``, then
    the answer."""
    from harness_core.testing.fake_model import Match, Step, ToolCall, Usage

    script = []
    for index in range(steps):
        inputs, outputs = STEP_USAGE[index]
        last = index == steps - 1
        script.append(
            Step(
                reasoning=FIRST_THOUGHT.format(secret=secret)
                if index == 0
                else (LAST_THOUGHT if last else f"Step {index + 1}: once more."),
                text=ANSWER if last else None,
                tool_calls=[]
                if last
                else [ToolCall(tool_call.name, tool_call.arguments, namespace=tool_call.namespace)],
                usage=Usage(input_tokens=inputs, output_tokens=outputs),
                match=Match(tool_result=index > 0),
            )
        )
    return script


def recorded_turn(
    cli: CliUnderTest, config: dict[str, Any], prompt: str, timeout: float = 90, **open_kwargs: Any
) -> tuple[Any, str, bytes]:
    """One turn in a new session on a ledger of its own, then its close: the result, the
    session's export (JSON text) and every byte of the ledger's files."""
    from harness_core.export import export_session

    with tempfile.TemporaryDirectory() as directory:

        async def main() -> tuple[Any, str]:
            ledger = f"sqlite:///{directory}/ledger.sqlite"
            async with cli.controller(turn_timeout=timeout, ledger=ledger) as c:
                ref = await cli.open_session(c, config, **open_kwargs)
                result = await c.run_turn(ref, prompt)
                await c.close_session(ref)
                return result, json.dumps(export_session(c.ledger, ref.session_id))

        result, exported = anyio.run(main)
        stored = b"".join(p.read_bytes() for p in Path(directory).iterdir() if p.is_file())
    return result, exported, stored


def assert_thinking_recorded(result: Any, exported: str, secret: str, blocks: int) -> None:
    """``blocks`` thinking blocks, each deltas then one ``thinking.completed``, between
    ``turn.started`` and the terminal; the secret redacted everywhere."""
    assert result.status == "completed", result
    types = [e.type for e in result.events]
    completed = [e.payload for e in result.events if e.type == "thinking.completed"]
    assert len(completed) == blocks, types
    assert types[0] == "turn.started" and result.events[-1].terminal
    first = types.index("thinking.completed")
    assert 0 < first < len(types) - 1
    assert completed[0].text is not None and "[REDACTED]" in completed[0].text, completed[0]
    assert completed[-1].text == LAST_THOUGHT
    assert all(c.characters and c.characters >= len(c.text or "") for c in completed)
    # the first block's reasoning comes before the first step's tool call / answer
    after = [t for t in types[first:] if t in ("tool.started", "message.completed")]
    assert after, types
    assert secret not in exported and secret not in repr(result.events)
    assert "thinking.delta" in exported


def assert_thinking_kept_out(result: Any, exported: str, stored: bytes, blocks: int) -> None:
    """A session opened with ``record_thinking=False``: counts only, no thinking text in the
    ledger's files or the export."""
    assert result.status == "completed", result
    types = [e.type for e in result.events]
    assert "thinking.delta" not in types
    completed = [e.payload for e in result.events if e.type == "thinking.completed"]
    assert len(completed) == blocks and all(c.text is None and c.characters for c in completed)
    for text in ("First I check the key", LAST_THOUGHT, "once more"):
        assert text not in exported
        assert text.encode() not in stored
    assert stored, "the ledger's files were read"


def assert_steps_sum(result: Any, steps: int) -> list[Any]:
    """``steps`` ``model.requested``/``model.completed`` pairs whose usage sums to the turn's."""
    requested = [e for e in result.events if e.type == "model.requested"]
    completed = [e.payload for e in result.events if e.type == "model.completed"]
    assert len(requested) == len(completed) == steps, [e.type for e in result.events]
    assert all(c.usage is not None and c.duration_ms is not None for c in completed)
    for name in ("input_tokens", "output_tokens"):
        total = sum(getattr(c.usage, name) or 0 for c in completed)
        assert total == getattr(result.usage, name), (name, completed, result.usage)
    return completed


def reasoning_turns(
    cli: CliUnderTest,
    tool_call: Any,
    secret: str,
    *,
    steps: int = 3,
    model_steps: bool = True,
    endpoint: str | None = None,
    **extra: Any,
) -> tuple[Any, Any]:
    """The thinking scenario twice (recorded, then kept out), and the model steps' sum when
    ``model_steps``; returns both results."""
    from harness_core.testing.fake_model import FakeModelServer

    results = []
    for record in (True, False):
        with FakeModelServer(reasoning_script(tool_call, secret, steps=steps)) as server:
            config = cli.config(cli.url(server, endpoint), **extra)
            result, exported, stored = recorded_turn(
                cli, config, "check the key and answer", record_thinking=record
            )
        if record:
            assert_thinking_recorded(result, exported, secret, steps)
        else:
            assert_thinking_kept_out(result, exported, stored, steps)
        if model_steps:
            assert_steps_sum(result, steps)
        results.append(result)
    return results[0], results[1]


#: The host's instructions the instructions scenario opens its session with.
INSTRUCTIONS = "- Host rule 7: always answer in one sentence. (marker HOST-INSTRUCTIONS-31)"
MARKER = "HOST-INSTRUCTIONS-31"


def text_of(content: Any) -> str:
    """The text of a message's content (a string, or its text blocks)."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "\n".join(
        b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def _texts(items: Any, roles: tuple[str, ...]) -> str:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") in roles:
            out.append(text_of(item.get("content")))
    return "\n".join(out)


def system_text(request: Any) -> str:
    """Everything a recorded model request says in its system prompt (Messages ``system``,
    Responses ``instructions`` and developer/system input items, Chat system/developer
    messages)."""
    body = request.body if isinstance(request.body, dict) else {}
    if request.endpoint == "messages":
        return text_of(body.get("system"))
    if request.endpoint == "responses":
        own = body.get("instructions")
        return "\n".join(
            [
                own if isinstance(own, str) else "",
                _texts(body.get("input"), ("developer", "system")),
            ]
        )
    return _texts(body.get("messages"), ("system", "developer"))


def user_text(request: Any) -> str:
    """Every user message of a recorded model request."""
    body = request.body if isinstance(request.body, dict) else {}
    items = body.get("messages") if request.endpoint != "responses" else body.get("input")
    return _texts(items, ("user",))


def instructions_reach_the_model(
    cli: CliUnderTest, *, native: bool, endpoint: str | None = None, **extra: Any
) -> tuple[Any, list[Any]]:
    """A session opened with :data:`INSTRUCTIONS`, two turns: the model's first request carries
    them - in its system prompt when ``native``, else before the first prompt - and
    ``session.opened`` records them; returns the first result and the tool-offering requests."""
    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    script = [Step(text="One sentence.", times=None, match=Match(tools=None))]
    with FakeModelServer(script) as server:
        config = cli.config(cli.url(server, endpoint), **extra)

        async def main() -> tuple[Any, Any, list[Any]]:
            async with cli.controller(turn_timeout=90) as c:
                ref = await cli.open_session(c, config, instructions=INSTRUCTIONS)
                first = await c.run_turn(ref, "first question")
                second = await c.run_turn(ref, "second question")
                return first, second, c.events(ref.session_id)

        first, second, events = anyio.run(main)
        requests = [r for r in server.model_requests() if r.tool_names]
    assert first.ok and second.ok, (first, second)
    opened = events[0].payload
    assert events[0].type == "session.opened" and opened.instructions == INSTRUCTIONS
    started = [e.payload.prompt for e in events if e.type == "turn.started"]
    assert started == ["first question", "second question"]  # the ledger keeps the host's
    assert requests, "the model was asked"
    first_request = requests[0]
    if native:
        assert MARKER in system_text(first_request), system_text(first_request)[-400:]
        assert MARKER not in user_text(first_request)
        assert all(MARKER in system_text(r) for r in requests)
    else:
        asked = user_text(first_request)
        assert asked.index(MARKER) < asked.index("first question"), asked[:400]
        assert user_text(requests[-1]).count(MARKER) == 1  # said once: with the first prompt
    return first, requests


def vendor_session_id_kept(cli: CliUnderTest, *, endpoint: str | None = None) -> str:
    """A turn, then a resume in a new controller: the CLI's own session id is in the session
    record, ``session.resumed`` and the export (``session.opened`` too when the adapter knew
    it at open); returns it."""
    from harness_core.export import export_session
    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    script = [Step(text="Noted.", times=None, match=Match(tools=None))]
    with FakeModelServer(script) as server:
        config = cli.config(cli.url(server, endpoint))

        async def main() -> tuple[Any, Any, Any, dict[str, Any]]:
            async with cli.controller(turn_timeout=90) as c:
                ref = await cli.open_session(c, config)
                first = await c.run_turn(ref, "remember this")
                after_turn = c.ledger.get_session(ref.session_id)
            async with cli.controller(turn_timeout=90) as c:
                await c.resume_session(ref.session_id)
                events = c.events(ref.session_id)
                await c.close_session(ref)
                return first, after_turn, events, export_session(c.ledger, ref.session_id)

        first, after_turn, events, bundle = anyio.run(main)
    assert first.ok, first
    vendor = after_turn.vendor_session_id
    assert isinstance(vendor, str) and vendor, after_turn
    resumed = [e.payload for e in events if e.type == "session.resumed"]
    assert resumed and resumed[-1].vendor_session_id == vendor
    opened = events[0].payload.vendor_session_id
    assert opened in (None, vendor)
    assert bundle["session"]["vendor_session_id"] == vendor, bundle["session"]
    return vendor
