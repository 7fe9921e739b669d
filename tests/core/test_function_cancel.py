"""A one-function harness that swallows its turn's cancellation (catches it and awaits again)
no longer holds the turn: after ``CANCEL_GRACE`` it is closed and left, and the turn ends with
exactly one terminal event (cancelled, or failed with ``timeout``); the process goes on."""

from __future__ import annotations

import logging
import time

import anyio
import pytest

from harness_core import function_harness, harness

#: how long the swallowing functions go on at most (the turn hung this long before)
SWALLOW_SECONDS = 10.0
GRACE = 0.3


async def _swallow(cleaned: list[str], everything: bool) -> None:
    """Catch the cancellation and wait again, for ``SWALLOW_SECONDS``; ``everything``: catch
    every exception (the close's ``GeneratorExit`` too) rather than the cancellation only."""
    deadline = time.monotonic() + SWALLOW_SECONDS
    caught = BaseException if everything else anyio.get_cancelled_exc_class()
    try:
        while time.monotonic() < deadline:
            try:
                await anyio.sleep(3600)
            except caught:
                pass
    finally:
        cleaned.append("finally")


cleaned_log: list[str] = []  # what the functions cleaned up


@harness("swallows")
async def swallows(message, session):
    if message.content == "well":
        return "fine"
    await _swallow(cleaned_log, everything=message.content == "everything")
    return "never"


@harness("swallows-streaming")
async def swallows_streaming(message, session):
    if message.content == "well":
        yield "fine"
        return
    yield "started "
    await _swallow(cleaned_log, everything=message.content == "everything")
    yield "never"


@harness("cleans-up")
async def cleans_up(message, session):
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.sleep(2 * GRACE)  # a cleanup that takes longer than the grace
        cleaned_log.append("cleaned")
        raise
    return "never"


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setattr(function_harness, "CANCEL_GRACE", GRACE)
    cleaned_log.clear()


async def _turn(controller, ref, how, prompt="swallow"):
    started = time.monotonic()
    if how == "timeout":
        async with controller.turn(ref, prompt, timeout=0.2) as turn:
            events = [event async for event in turn]
        return events, time.monotonic() - started
    async with anyio.create_task_group() as group:

        async def cancel_soon():
            await anyio.sleep(0.2)
            await controller.cancel_turn(ref.session_id)

        group.start_soon(cancel_soon)
        async with controller.turn(ref, prompt) as turn:
            events = [event async for event in turn]
    return events, time.monotonic() - started


# A function that catches GeneratorExit too is left unresumed: Python says "coroutine ignored
# GeneratorExit" when it is collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("how", ["cancel", "timeout"])
@pytest.mark.parametrize("what", ["the-cancel", "everything"])
@pytest.mark.parametrize("name", ["swallows", "swallows-streaming"])
def test_a_function_that_swallows_the_cancel_ends_its_turn_in_time(
    make_controller, workspace, caplog, name, what, how, backend
):
    if backend == "trio":
        pytest.importorskip("trio")

    async def main():
        async with make_controller(swallows, swallows_streaming) as controller:
            ref = await controller.open_session(harness=name, workspace=workspace)
            events, took = await _turn(controller, ref, how, what)
            # the process and the session go on: the next turn runs as usual
            after = await controller.run_turn(ref, "well")
            return ref, events, took, after

    with caplog.at_level(logging.WARNING, logger="harness_core"):
        ref, events, took, after = anyio.run(main, backend=backend)
    assert took < SWALLOW_SECONDS / 2, f"the turn took {took:.1f} s"
    assert [e.terminal for e in events].count(True) == 1 and events[-1].terminal
    if what == "everything" and backend == "trio":
        # trio's sleep waits in a cancel scope of its own, which a function swallowing its
        # close too leaves open: the turn cannot end as cancelled, but it ends
        assert events[-1].type == "turn.failed"
        assert events[-1].payload.reason == "provider-failed"
    elif how == "cancel":
        assert events[-1].type == "turn.cancelled"
    else:
        assert events[-1].type == "turn.failed" and events[-1].payload.reason == "timeout"
    # closed: its finally blocks ran (unless it swallowed the close too)
    expected = [] if what == "everything" else ["finally"]
    assert cleaned_log == expected
    assert after.status == "completed" and after.text == "fine"
    warned = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
    assert len(warned) == 1
    assert name in warned[0] and ref.session_id in warned[0]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cleanup_that_honours_the_cancel_is_not_cut_short(
    make_controller, workspace, caplog, backend
):
    async def main():
        async with make_controller(cleans_up) as controller:
            ref = await controller.open_session(harness="cleans-up", workspace=workspace)
            return await _turn(controller, ref, "cancel")

    with caplog.at_level(logging.WARNING, logger="harness_core"):
        events, _took = anyio.run(main, backend=backend)
    assert events[-1].type == "turn.cancelled"
    assert cleaned_log == ["cleaned"]
    assert not [r for r in caplog.records if "abandoned" in r.getMessage()]
