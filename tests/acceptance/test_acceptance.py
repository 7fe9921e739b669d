"""Seed 000's acceptance list, with a fake adapter (written for the tests) through the controller:
opening a session, two turns with same-session resume, targeted cancellation, close, unsupported
operations, stream failures, event bounds and raw-field exclusion - then the conformance kit."""

from __future__ import annotations

import json

import anyio
import pytest
from harness_hookspecs import (
    HarnessError,
    OpenSessionRequest,
    SessionRef,
    Status,
    ToolStarted,
)
from harness_hookspecs.events import make_payload

from harness_core import Controller, plugins_from
from harness_core.conformance import run_conformance
from harness_core.testing.processes import alive

from .acceptance_fakes import SLOW, FakeAdapter

TERMINALS = {"turn.completed", "turn.failed", "turn.cancelled"}


class NoExtras(FakeAdapter):
    name = "no-extras"
    features = ()


def types(events):
    return [e.type for e in events]


def test_open_session_keeps_the_provider_id_verbatim(make_controller, workspace):
    async def main():
        async with make_controller(FakeAdapter()) as controller:
            ref = await controller.open_session(harness="fake", workspace=workspace)
            return ref, controller.events(ref.session_id)

    ref, events = anyio.run(main)
    assert ref.provider == "fake" and ref.target == "local"
    assert ref.session_id.startswith("fake-native:")  # the adapter's opaque id, not ours
    assert types(events) == ["session.opened"]
    assert events[0].session_id == ref.session_id and events[0].turn_id is None


def test_a_local_session_needs_a_workspace(make_controller):
    with pytest.raises(ValueError):
        OpenSessionRequest(harness="fake", target="local")

    async def main():
        async with make_controller(FakeAdapter()) as controller:
            await controller.open_session(harness="fake")

    with pytest.raises(HarnessError) as info:
        anyio.run(main)
    assert info.value.reason == "invalid-request"


def test_two_turns_then_resume_in_a_new_controller(tmp_path, workspace):
    adapter = FakeAdapter()
    plugins = plugins_from([adapter])
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"

    async def first():
        async with Controller(plugins=plugins, ledger=ledger, state_dir=tmp_path / "s") as c:
            ref = await c.open_session(harness="fake", workspace=workspace)
            one = await c.run_turn(ref, "first")
            two = await c.run_turn(ref, "second")
            return ref, one, two

    ref, one, two = anyio.run(first)
    assert one.ok and two.ok
    assert one.text.startswith("turn 1:") and two.text.startswith("turn 2:")

    adapter.sessions.clear()  # a new controller finds nothing in memory: state is on disk

    async def second():
        async with Controller(plugins=plugins, ledger=ledger, state_dir=tmp_path / "s") as c:
            resumed = await c.resume_session(
                SessionRef(provider=ref.provider, target=ref.target, session_id=ref.session_id),
                workspace=workspace,
            )
            three = await c.run_turn(resumed, "third")
            return resumed, three, c.events(ref.session_id)

    resumed, three, events = anyio.run(second)
    assert resumed == ref
    assert three.ok and three.text.startswith("turn 3:")  # same session, history kept
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert types(events).count("session.resumed") == 1


def test_targeted_cancellation_kills_the_turn_process(make_controller, workspace):
    adapter = FakeAdapter()

    async def main():
        async with make_controller(adapter) as controller:
            ref = await controller.open_session(harness="fake", workspace=workspace)
            seen = []
            async with controller.turn(ref, "sleep 30") as turn:
                async for event in turn:
                    seen.append(event)
                    if event.type == "status":
                        live = controller.live(ref.session_id)
                        pids = [p.pid for p in live.context.turn_processes]
                        with pytest.raises(HarnessError) as info:
                            await controller.cancel_turn(ref, "turn_someone_else")
                        assert info.value.reason == "turn-not-found"
                        await controller.cancel_turn(ref, turn.turn_id)
            after = await controller.run_turn(ref, "still usable")
            return seen, pids, turn.turn_id, after

    seen, pids, turn_id, after = anyio.run(main)
    assert types(seen)[-1] == "turn.cancelled" and seen[-1].payload.by == "host"
    assert sum(t in TERMINALS for t in types(seen)) == 1
    assert adapter.cancelled == [turn_id]  # the provider-side cancel was targeted
    assert len(pids) == 1 and not alive(pids[0])
    assert after.ok  # the session survives a cancelled turn


def test_close_is_idempotent_and_refuses_turns(make_controller, workspace):
    async def main():
        async with make_controller(FakeAdapter()) as controller:
            ref = await controller.open_session(harness="fake", workspace=workspace)
            await controller.run_turn(ref, "hello")
            await controller.close_session(ref)
            await controller.close_session(ref)
            with pytest.raises(HarnessError) as info:
                await controller.run_turn(ref, "again")
            return info.value.reason, controller.events(ref.session_id)

    reason, events = anyio.run(main)
    assert reason == "session-closed"
    assert types(events).count("session.closed") == 1 and events[-1].type == "session.closed"


def test_unsupported_operations(make_controller, workspace):
    async def main():
        async with make_controller(NoExtras()) as controller:
            with pytest.raises(HarnessError) as target:
                await controller.open_session(harness="no-extras", target="cloud")
            ref = await controller.open_session(harness="no-extras", workspace=workspace)
            async with controller.turn(ref, "hello") as turn:
                with pytest.raises(HarnessError) as cancel:
                    await controller.cancel_turn(ref, turn.turn_id)
                await turn.drain()
            await controller.close_session(ref)
        async with make_controller(NoExtras()) as controller:
            with pytest.raises(HarnessError) as resume:
                await controller.resume_session(ref, workspace=workspace)
        return target.value, cancel.value, resume.value, turn.result()

    target, cancel, resume, result = anyio.run(main)
    assert target.reason == "unsupported-target"
    assert cancel.reason == "unsupported-feature"
    assert resume.reason in ("unsupported-feature", "session-closed")
    assert result.ok  # the refused cancel left the turn alone


def test_unsupported_resume_on_an_open_session(tmp_path, workspace):
    plugins = plugins_from([NoExtras()])
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"

    async def main():
        async with Controller(plugins=plugins, ledger=ledger, state_dir=tmp_path / "s") as c:
            ref = await c.open_session(harness="no-extras", workspace=workspace)
        async with Controller(plugins=plugins, ledger=ledger, state_dir=tmp_path / "s") as c:
            with pytest.raises(HarnessError) as info:
                await c.resume_session(ref, workspace=workspace)
        return info.value.reason

    assert anyio.run(main) == "unsupported-feature"


@pytest.mark.parametrize(
    ("prompt", "hint_free"),
    [("fail", False), ("crash", True), ("truncate", True)],
)
def test_stream_failures_are_failed_never_completed(make_controller, workspace, prompt, hint_free):
    async def main():
        async with make_controller(FakeAdapter()) as controller:
            ref = await controller.open_session(harness="fake", workspace=workspace)
            return await controller.run_turn(ref, prompt)

    result = anyio.run(main)
    assert result.status == "failed" and result.reason == "provider-failed"
    assert types(result.events)[-1] == "turn.failed"
    dump = repr(result.events)
    assert "Traceback" not in dump and "sk-ant-" not in dump  # no raw provider text


def test_event_bounds():
    for bad in ("", "x" * 241, "line\nbreak", "bell\x07"):
        with pytest.raises(ValueError):
            Status(message=bad)
    with pytest.raises(ValueError):
        SessionRef(provider="fake", target="local", session_id="s" * 1025)
    with pytest.raises(ValueError):
        SessionRef(provider="x" * 65, target="local", session_id="s")
    with pytest.raises(ValueError):
        make_payload("tool.started", {"call_id": "c", "name": "n" * 129})
    assert Status(message="x" * 240).message == "x" * 240


def test_raw_fields_are_projected_out(make_controller, workspace, tmp_path):
    async def main():
        async with make_controller(FakeAdapter()) as controller:
            ref = await controller.open_session(harness="fake", workspace=workspace)
            result = await controller.run_turn(ref, "hello")
            return result, controller.export(ref.session_id)

    result, bundle = anyio.run(main)
    tool = next(e.payload for e in result.events if e.type == "tool.started")
    assert isinstance(tool, ToolStarted) and not hasattr(tool, "raw_arguments")
    text = json.dumps(bundle)
    for raw in ("raw_arguments", "stdout", "provider_billing_id", "/etc"):
        assert raw not in text
    assert result.usage.input_tokens == 3 and result.usage.output_tokens == 5
    ledger_bytes = (tmp_path / "ledger.sqlite").read_bytes()
    assert b"provider_billing_id" not in ledger_bytes


def test_the_kit_passes_the_fake_adapter_and_echo(workspace):
    report = run_conformance(FakeAdapter(), workspace=workspace, profile=SLOW)
    assert report.passed, report.format_table()
    echo = run_conformance("echo")
    assert echo.passed, echo.format_table()
    assert [c.name for c in echo.checks][:2] == ["descriptor", "turns-completed"]
