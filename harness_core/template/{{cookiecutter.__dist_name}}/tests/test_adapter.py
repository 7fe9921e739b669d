"""The adapter's own behaviour: line mapping, a real turn through the runtime, failure, cancel."""

import os

import anyio
import pytest
from harness_core import Controller, plugins_from
from harness_hookspecs import HarnessError, MessageDelta, TurnCompleted, TurnFailed

from {{ cookiecutter.__package_name }}.adapter import NAME, parse_line
from {{ cookiecutter.__package_name }}.adapter import {{ cookiecutter.__class_prefix }}Adapter as Adapter


@pytest.fixture
def make_controller(tmp_path):
    def make():
        return Controller(
            plugins=plugins_from([Adapter()]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        )

    return make


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "workspace"
    path.mkdir()
    (path / "README.md").write_text("hello\n")
    return str(path)


def test_parse_line_maps_native_lines_and_drops_the_rest():
    line = b'{"type": "text", "delta": "hi", "internal_id": 3}'
    assert parse_line(line) == MessageDelta(text="hi")
    assert parse_line(b'{"type": "result", "text": "done"}') == TurnCompleted(text="done")
    assert parse_line(b'{"type": "error", "kind": "auth", "detail": "raw"}') == TurnFailed(
        reason="authentication-required"
    )
    assert parse_line(b'{"type": "something-new"}') is None
    assert parse_line(b"") is None
    with pytest.raises(HarnessError) as error:
        parse_line(b"Traceback (most recent call last):")
    assert error.value.reason == "provider-failed"


def test_a_turn_runs_the_agent_and_maps_its_stream(make_controller, workspace):
    async def main():
        async with make_controller() as controller:
            ref = await controller.open_session(harness=NAME, workspace=workspace)
            first = await controller.run_turn(ref, "ls please")
            second = await controller.run_turn(ref, "again")
            await controller.close_session(ref)
            return first, second

    first, second = anyio.run(main)
    assert first.status == "completed", first.reason
    assert first.text == "turn 1: ls please"
    assert second.text == "turn 2: again"
    types = [e.type for e in first.events]
    assert types[0] == "turn.started" and types[-1] == "turn.completed"
    assert "tool.started" in types and "tool.completed" in types and "usage" in types
    assert first.usage is not None and first.usage.input_tokens == 2


def test_a_native_error_is_a_fixed_reason_without_raw_text(make_controller, workspace):
    async def main():
        async with make_controller() as controller:
            ref = await controller.open_session(harness=NAME, workspace=workspace)
            return await controller.run_turn(ref, "fail")

    result = anyio.run(main)
    assert result.status == "failed"
    assert result.reason == "authentication-required"
    assert "401" not in repr(result.events)


def test_a_missing_command_is_provider_unavailable(tmp_path, workspace):
    async def main():
        async with Controller(
            plugins=plugins_from([Adapter()]),
            ledger="memory:",
            state_dir=tmp_path / "state",
        ) as controller:
            ref = await controller.open_session(
                harness=NAME, workspace=workspace, config={"command": ["/nonexistent/agent"]}
            )
            return await controller.run_turn(ref, "hi")

    result = anyio.run(main)
    assert result.status == "failed"
    assert result.reason == "provider-unavailable"


def test_cancel_kills_the_agent(make_controller, workspace):
    async def main():
        async with make_controller() as controller:
            ref = await controller.open_session(harness=NAME, workspace=workspace)
            adapter = controller.plugins.harnesses[NAME]
            events = []
            async with controller.turn(ref, "sleep 30") as turn:

                async def consume():
                    async for event in turn:
                        events.append(event)

                with anyio.fail_after(10):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(consume)
                        # wait until the agent is really running, then cancel the turn
                        while (process := adapter._sessions[ref.session_id].process) is None:
                            await anyio.sleep(0.05)
                        pid = process.pid
                        await controller.cancel_turn(ref, turn.turn_id)
            return pid, events

    pid, events = anyio.run(main)
    assert [e.type for e in events][-1] == "turn.cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_resume_in_a_new_controller_continues_the_agent_session(make_controller, workspace):
    async def first_run():
        async with make_controller() as controller:
            ref = await controller.open_session(harness=NAME, workspace=workspace)
            await controller.run_turn(ref, "one")
            return ref

    async def second_run(ref):
        async with make_controller() as controller:
            resumed = await controller.resume_session(ref)
            return resumed, await controller.run_turn(resumed, "two")

    ref = anyio.run(first_run)
    resumed, result = anyio.run(second_run, ref)
    assert resumed == ref
    assert result.text == "turn 2: two"  # the agent's own session state survived
