"""The adapter's own behaviour: stream mapping, a real turn through the runtime, failure, cancel,
resume. ``workspace`` and ``make_controller`` are harness_cli_kit's pytest fixtures."""

import anyio
import pytest
from harness_core.testing.processes import alive, group_members
from harness_hookspecs import MessageDelta, TurnCompleted, TurnFailed

from {{ cookiecutter.__package_name }}.adapter import NAME, parse_stream
from {{ cookiecutter.__package_name }}.adapter import {{ cookiecutter.__class_prefix }}Adapter as Adapter


@pytest.fixture
def controller(make_controller):
    return lambda **kwargs: make_controller(Adapter(), **kwargs)


async def one_turn(controller, workspace, prompt, **config):
    async with controller() as c:
        ref = await c.open_session(harness=NAME, workspace=workspace, config=config)
        return await c.run_turn(ref, prompt)


def test_parse_stream_maps_native_lines_and_drops_the_rest():
    lines = [
        b'{"type": "init", "session": "s1"}',
        b'{"type": "text", "delta": "hi", "internal_id": 3}',
        b'{"type": "something-new"}',
        b"",
        b"Traceback (most recent call last):",
        b'{"type": "result", "text": "done"}',
    ]
    payloads = parse_stream(lines)
    assert payloads[0] == MessageDelta(text="hi")
    assert payloads[-1] == TurnCompleted(text="done") and len(payloads) == 2
    failed = parse_stream([b'{"type": "error", "kind": "auth", "detail": "raw 401"}'], 1)
    assert isinstance(failed[-1], TurnFailed) and failed[-1].reason == "authentication-required"
    assert "raw" not in repr(failed)
    garbage = parse_stream([b"Traceback (most recent call last):"])
    assert garbage[-1].reason == "provider-failed"


def test_a_turn_runs_the_agent_and_maps_its_stream(controller, workspace):
    async def main():
        async with controller() as c:
            ref = await c.open_session(harness=NAME, workspace=workspace)
            first = await c.run_turn(ref, "ls please")
            second = await c.run_turn(ref, "again")
            await c.close_session(ref)
            return first, second

    first, second = anyio.run(main)
    assert first.status == "completed", first.reason
    assert first.text == "turn 1: ls please"
    assert second.text == "turn 2: again"
    types = [e.type for e in first.events]
    assert types[0] == "turn.started" and types[-1] == "turn.completed"
    assert "tool.started" in types and "tool.completed" in types and "usage" in types
    assert first.usage is not None and first.usage.input_tokens == 2


def test_a_native_error_is_a_fixed_reason_without_raw_text(controller, workspace):
    result = anyio.run(one_turn, controller, workspace, "fail")
    assert result.status == "failed"
    assert result.reason == "authentication-required"
    # the agent's raw text, not just "401": event ids and timestamps may contain those digits
    assert "raw text never crosses" not in repr(result.events)
    assert "401" not in repr([event.payload for event in result.events])


def test_a_missing_command_is_provider_unavailable(controller, workspace):
    missing = {"command": ["/nonexistent/agent"]}
    result = anyio.run(lambda: one_turn(controller, workspace, "hi", **missing))
    assert result.status == "failed"
    assert result.reason == "provider-unavailable"


def test_cancel_kills_the_agent(controller, workspace):
    async def main():
        async with controller() as c:
            ref = await c.open_session(harness=NAME, workspace=workspace)
            context = c.live(ref.session_id).context
            async with c.turn(ref, "sleep 30") as turn:
                async for event in turn:
                    if event.type == "status":  # the agent is running
                        pid = context.turn_processes[0].pid
                        assert alive(pid)
                        await c.cancel_turn(ref, turn.turn_id)
                    last = event
            return pid, last

    pid, last = anyio.run(main)
    assert last.type == "turn.cancelled"
    assert not alive(pid) and group_members(pid) == []


def test_resume_in_a_new_controller_continues_the_agent_session(controller, workspace):
    async def first_run():
        async with controller() as c:
            ref = await c.open_session(harness=NAME, workspace=workspace)
            await c.run_turn(ref, "one")
            return ref

    async def second_run(ref):
        async with controller() as c:
            resumed = await c.resume_session(ref, workspace=workspace)
            return resumed, await c.run_turn(resumed, "two")

    ref = anyio.run(first_run)
    resumed, result = anyio.run(second_run, ref)
    assert resumed == ref
    assert result.text == "turn 2: two"  # the agent's own session state survived
