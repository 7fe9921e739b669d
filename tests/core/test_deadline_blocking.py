"""A deadline is a deadline (issue 26, item 7): a turn that passes its deadline ends
``turn.failed(timeout)`` however it regained control - even when a one-function harness blocked
the event loop past the deadline (no checkpoint for the deadline to interrupt) and then
returned an answer."""

from __future__ import annotations

import time

import anyio
import pytest

from harness_core import harness


@harness("blocks-then-answers")
async def blocks_then_answers(message, session):
    time.sleep(float(message.content))  # blocks the loop: the deadline cannot interrupt it
    return "done late"


@harness("blocks-then-streams")
async def blocks_then_streams(message, session):
    yield "early "
    time.sleep(float(message.content))
    yield "late"


@harness("blocks-then-fails")
async def blocks_then_fails(message, session):
    time.sleep(float(message.content))
    raise RuntimeError("late failure")


def _run(make_controller, workspace, fn, prompt, **options):
    async def main():
        async with make_controller(fn, turn_timeout=0.3, **options) as controller:
            name = fn.__harness_adapter__.name
            ref = await controller.open_session(harness=name, workspace=workspace)
            result = await controller.run_turn(ref, prompt)
            # the session works on after the timed-out turn
            quick = await controller.run_turn(ref, "0")
            return result, quick

    return anyio.run(main, backend="asyncio")


@pytest.mark.parametrize("fn", [blocks_then_answers, blocks_then_streams, blocks_then_fails])
def test_a_function_blocking_past_its_deadline_ends_timeout(make_controller, workspace, fn):
    started = time.monotonic()
    result, quick = _run(make_controller, workspace, fn, "1.0")
    assert time.monotonic() - started >= 1.0
    assert (result.status, result.reason) == ("failed", "timeout")
    terminals = [event for event in result.events if event.terminal]
    assert [event.type for event in terminals] == ["turn.failed"]
    assert quick.status == ("failed" if fn is blocks_then_fails else "completed")


def test_a_function_blocking_within_its_deadline_completes(make_controller, workspace):
    result, _ = _run(make_controller, workspace, blocks_then_answers, "0.05")
    assert (result.status, result.text) == ("completed", "done late")


@harness("ignores-its-cancel")
async def ignores_its_cancel(message, session):
    """Swallows every cancel and streams on, for 5 s (a cancel is re-delivered at each sleep:
    without the bound it streamed ~100,000 events past its deadline)."""
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            await anyio.sleep(0.05)
        except BaseException:  # what the harness under test does wrong: swallows the cancel
            pass
        yield "tick "
    yield "done"


def test_a_function_ignoring_its_cancel_ends_at_the_deadline_with_bounded_events(
    make_controller, workspace
):
    from harness_core.turn import AFTER_CANCEL_MAX

    started = time.monotonic()
    result, _ = _run(make_controller, workspace, ignores_its_cancel, "go")
    assert time.monotonic() - started < 4  # not the function's own 5 s
    assert (result.status, result.reason) == ("failed", "timeout")
    deltas = [event for event in result.events if event.type == "message.delta"]
    assert len(deltas) <= 0.3 / 0.05 + AFTER_CANCEL_MAX + 1


def test_a_cancelled_function_ignoring_it_ends_cancelled(make_controller, workspace):
    async def main():
        async with make_controller(ignores_its_cancel) as controller:
            ref = await controller.open_session(harness="ignores-its-cancel", workspace=workspace)
            asked = False
            async with controller.turn(ref, "go") as turn:
                async for event in turn:  # to its end: the terminal comes without leaving
                    if event.type == "message.delta" and not asked:
                        asked = True
                        await controller.cancel_turn(ref, turn.turn_id)
            return turn.result()

    started = time.monotonic()
    result = anyio.run(main)
    assert time.monotonic() - started < 4
    assert result.status == "cancelled"
