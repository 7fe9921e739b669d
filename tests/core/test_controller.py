"""Controller guarantees: ordering, one terminal, turn-active, cancel, close, resume, failures."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import (
    HarnessDescriptor,
    MessageDelta,
    SessionRef,
    Status,
    TurnCompleted,
)

from harness_core import HarnessError, harness, hookimpl
from harness_core.testing.waiting import wait_until


@harness("talker")
async def talker(message, session):
    for word in message.content.split():
        yield word


#: The sessions whose sleeper has started sleeping (tests wait for that, not for a fixed time).
ASLEEP: set[str] = set()


@harness("sleeper")
async def sleeper(message, session):
    ASLEEP.add(session.session_id)
    await anyio.sleep(60)
    yield "never"


@harness("no-terminal")
async def no_terminal(message, session):
    # An adapter-level stream that ends without a terminal event (the function form always
    # adds one, so yield through a raw adapter below instead).
    yield "x"


class RawAdapter:
    """A minimal class adapter whose run_turn is scripted per test."""

    def __init__(self, name, script, features=("resume", "cancel")):
        self.name = name
        self.script = script
        self._descriptor = HarnessDescriptor(provider=name, targets=["local"], features=features)

    def describe(self):
        return self._descriptor

    async def open_session(self, request, context):
        return SessionRef(provider=self.name, target=request.target, session_id=context.session_id)

    async def resume_session(self, request, context):
        return request.session

    async def run_turn(self, request, context):
        async for item in self.script(request, context):
            yield item

    async def cancel_turn(self, request, context):
        return None

    async def close_session(self, request, context):
        return None


async def ends_without_terminal(request, context):
    yield MessageDelta(text="partial")


async def raises_secretly(request, context):
    yield MessageDelta(text="partial")
    raise RuntimeError("sk-ant-secretvalue1234567890 Traceback stuff")


async def yields_garbage(request, context):
    yield {"type": "message.delta", "text": "not a payload object"}


async def two_terminals(request, context):
    yield TurnCompleted(text="first")
    yield TurnCompleted(text="second")


async def chatty(request, context):
    for i in range(100):
        yield Status(message=f"step {i}")
    yield TurnCompleted()


def run(make_controller, workspace, *objs, prompt="hi", harness_name=None, **kwargs):
    async def main():
        async with make_controller(*objs, **kwargs) as controller:
            name = harness_name or getattr(objs[0], "__harness_adapter__", objs[0]).name
            ref = await controller.open_session(harness=name, workspace=workspace)
            return await controller.run_turn(ref, prompt)

    return anyio.run(main)


def test_sequence_is_session_wide_and_gap_free(make_controller, workspace):
    async def main():
        async with make_controller(talker) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            await controller.run_turn(ref, "a b c")
            await controller.run_turn(ref, "d e")
            await controller.close_session(ref)
            return controller.events(ref.session_id)

    events = anyio.run(main)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "session.opened" and events[-1].type == "session.closed"
    assert len({e.event_id for e in events}) == len(events)
    per_turn: dict[str, list[str]] = {}
    for e in events:
        if e.turn_id:
            per_turn.setdefault(e.turn_id, []).append(e.type)
    assert len(per_turn) == 2
    for types in per_turn.values():
        assert types[0] == "turn.started"
        assert types[-1] == "turn.completed"
        assert sum(t in ("turn.completed", "turn.failed", "turn.cancelled") for t in types) == 1


def test_stream_without_terminal_is_failed_never_completed(make_controller, workspace):
    result = run(make_controller, workspace, RawAdapter("raw", ends_without_terminal))
    assert result.status == "failed"
    assert result.reason == "provider-failed"


def test_exception_is_provider_failed_without_raw_text(make_controller, workspace):
    result = run(make_controller, workspace, RawAdapter("raw", raises_secretly))
    assert result.status == "failed" and result.reason == "provider-failed"
    dump = repr(result.events)
    assert "Traceback" not in dump and "secretvalue" not in dump


def test_non_canonical_event_fails_the_turn(make_controller, workspace):
    result = run(make_controller, workspace, RawAdapter("raw", yields_garbage))
    assert result.status == "failed" and result.reason == "provider-failed"


def test_only_the_first_terminal_counts(make_controller, workspace):
    result = run(make_controller, workspace, RawAdapter("raw", two_terminals))
    terminals = [e for e in result.events if e.terminal]
    assert len(terminals) == 1 and terminals[0].payload.text == "first"


def test_event_count_limit(make_controller, workspace):
    result = run(make_controller, workspace, RawAdapter("raw", chatty), max_events_per_turn=10)
    assert result.status == "failed" and result.reason == "limit-exceeded"
    assert len(result.events) == 1 + 10 + 1


def test_deadline_is_timeout(make_controller, workspace):
    result = run(make_controller, workspace, sleeper, turn_timeout=0.2)
    assert result.status == "failed" and result.reason == "timeout"


def test_turn_active_is_refused(make_controller, workspace):
    async def main():
        async with make_controller(sleeper) as controller:
            ref = await controller.open_session(harness="sleeper", workspace=workspace)
            async with controller.turn(ref, "first") as turn:
                with pytest.raises(HarnessError) as info:
                    async with controller.turn(ref, "second"):
                        pass
                assert info.value.reason == "turn-active"
                await controller.cancel_turn(ref, turn.turn_id)
                assert [e.type async for e in turn][-1] == "turn.cancelled"

    anyio.run(main)


def test_cancel_mid_step_reaches_the_caller(make_controller, workspace):
    async def main():
        async with make_controller(sleeper) as controller:
            ref = await controller.open_session(harness="sleeper", workspace=workspace)
            seen = []
            async with anyio.create_task_group() as tg:

                async def consume():
                    async with controller.turn(ref, "x") as turn:
                        async for event in turn:
                            seen.append(event.type)

                tg.start_soon(consume)
                await wait_until(lambda: ref.session_id in ASLEEP, what="the adapter's step")
                turn = controller.active_turn(ref)  # the consumer is blocked inside the adapter
                with anyio.fail_after(2):
                    await controller.cancel_turn(ref, turn.turn_id)
            with pytest.raises(HarnessError) as info:
                await controller.cancel_turn(ref, turn.turn_id)
            assert info.value.reason == "turn-not-found"
            return seen

    assert anyio.run(main) == ["turn.started", "turn.cancelled"]


def test_cancel_needs_the_feature(make_controller, workspace):
    async def main():
        adapter = RawAdapter("nocancel", chatty, features=())
        async with make_controller(adapter) as controller:
            ref = await controller.open_session(harness="nocancel", workspace=workspace)
            async with controller.turn(ref, "x") as turn:
                with pytest.raises(HarnessError) as info:
                    await controller.cancel_turn(ref, turn.turn_id)
                await turn.drain()
            return info.value.reason

    assert anyio.run(main) == "unsupported-feature"


def test_leaving_the_turn_early_records_cancelled(make_controller, workspace):
    async def main():
        async with make_controller(talker) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            async with controller.turn(ref, "a b c d") as turn:
                async for _ in turn:
                    break
            return controller.events(ref.session_id)[-1].type

    assert anyio.run(main) == "turn.cancelled"


def test_close_is_idempotent_and_closed_session_refuses_turns(make_controller, workspace):
    async def main():
        async with make_controller(talker) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            await controller.close_session(ref)
            await controller.close_session(ref)
            with pytest.raises(HarnessError) as info:
                await controller.run_turn(ref, "x")
            events = controller.events(ref.session_id)
            return info.value.reason, [e.type for e in events]

    reason, types = anyio.run(main)
    assert reason == "session-closed"
    assert types == ["session.opened", "session.closed"]


def test_close_cancels_an_active_turn_first(make_controller, workspace):
    async def main():
        async with make_controller(sleeper) as controller:
            ref = await controller.open_session(harness="sleeper", workspace=workspace)
            async with anyio.create_task_group() as tg:

                async def consume():
                    async with controller.turn(ref, "x") as turn:
                        await turn.drain()

                tg.start_soon(consume)
                await wait_until(lambda: ref.session_id in ASLEEP, what="the turn's start")
                await controller.close_session(ref)
            return [e.type for e in controller.events(ref.session_id)]

    assert anyio.run(main) == [
        "session.opened",
        "turn.started",
        "turn.cancelled",
        "session.closed",
    ]


def test_resume_from_ref_in_a_new_controller(make_controller, workspace):
    async def first():
        async with make_controller(talker) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            await controller.run_turn(ref, "one two")
            return ref

    ref = anyio.run(first)

    async def second():
        async with make_controller(talker) as controller:
            resumed = await controller.resume_session(ref, workspace=workspace)
            assert resumed == ref
            await controller.run_turn(ref, "three")
            return controller.events(ref.session_id)

    events = anyio.run(second)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert "session.resumed" in [e.type for e in events]


def test_resume_needs_the_feature_and_unknown_sessions_fail(make_controller, workspace):
    adapter = RawAdapter("noresume", chatty, features=())

    async def main():
        async with make_controller(adapter) as controller:
            ref = await controller.open_session(harness="noresume", workspace=workspace)
        async with make_controller(adapter) as controller:
            with pytest.raises(HarnessError) as unsupported:
                await controller.resume_session(ref, workspace=workspace)
            with pytest.raises(HarnessError) as missing:
                await controller.resume_session("no-such-session")
            with pytest.raises(HarnessError) as missing_turn:
                await controller.run_turn("no-such-session", "x")
        return unsupported.value.reason, missing.value.reason, missing_turn.value.reason

    assert anyio.run(main) == ("unsupported-feature", "session-not-found", "session-not-found")


def test_bad_requests_are_invalid_request(make_controller, workspace):
    async def main():
        async with make_controller(talker) as controller:
            reasons = []
            for kwargs in (
                {"harness": "talker"},  # no workspace for local
                {"harness": "nope", "workspace": workspace},
                {"harness": "talker", "workspace": workspace + "/missing"},
            ):
                with pytest.raises(HarnessError) as info:
                    await controller.open_session(**kwargs)
                reasons.append(info.value.reason)
            ref = await controller.open_session(harness="talker", workspace=workspace)
            with pytest.raises(HarnessError) as info:
                await controller.run_turn(ref, "")
            reasons.append(info.value.reason)
            return reasons

    assert anyio.run(main) == ["invalid-request"] * 4


def test_unsupported_target(make_controller):
    async def main():
        async with make_controller(talker) as controller:
            with pytest.raises(HarnessError) as info:
                await controller.open_session(harness="talker", target="cloud")
            return info.value.reason

    assert anyio.run(main) == "unsupported-target"


def test_observers_see_every_event_in_order_and_cannot_break_turns(make_controller, workspace):
    seen = []

    class Observer:
        @hookimpl
        def on_event(self, event):
            seen.append(event.sequence)
            raise RuntimeError("observer bug")

    async def main():
        async with make_controller(talker, Observer()) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            return await controller.run_turn(ref, "a b")

    result = anyio.run(main)
    assert result.status == "completed"
    assert seen == list(range(1, len(seen) + 1)) and len(seen) == 1 + len(result.events)


def test_wrapper_hook_can_wrap_the_lifecycle(make_controller, workspace):
    calls = []

    class Audit:
        @hookimpl(wrapper=True)
        def harness_open_session(self, request, context):
            calls.append(("open", request.harness))
            return (yield)

    async def main():
        async with make_controller(talker, Audit()) as controller:
            await controller.open_session(harness="talker", workspace=workspace)

    anyio.run(main)
    assert calls == [("open", "talker")]


def test_works_under_trio(make_controller, workspace):
    pytest.importorskip("trio")

    async def main():
        async with make_controller(talker) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            return await controller.run_turn(ref, "on trio")

    assert anyio.run(main, backend="trio").text == "ontrio"
