"""An ``async def`` observer is fed through its own bounded queue: the turn never waits for it,
it sees every event in order when the queue holds them, and beyond the bound it loses events
(counted and reported once by name), never the turn its time."""

from __future__ import annotations

import anyio

from harness_core import harness, hookimpl


class Gated:
    """An async observer that cannot handle anything until ``gate`` is set (a stalled webhook)."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.seen: list[int] = []

    @hookimpl
    async def on_event(self, event):
        await self.gate.wait()
        await anyio.sleep(0)  # yields between events as real I/O would
        self.seen.append(event.sequence)


def test_a_stalled_async_observer_never_holds_the_turn_and_then_sees_every_event(
    make_controller, workspace
):
    from tests.core.test_controller import talker
    from tests.core.test_observer_isolation import Audit

    slow, audit = Gated(), Audit()

    async def main():
        async with make_controller(talker, slow, audit) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            # If delivery awaited the observer, this turn could never end: the gate opens after.
            with anyio.fail_after(60):
                result = await controller.run_turn(ref, " ".join(f"w{i}" for i in range(50)))
            assert slow.seen == []  # nothing handled yet, the turn is over
            slow.gate.set()
            await controller.close_session(ref)  # its events delivered too
            assert await controller.delivery.observers_idle()
            everything = [e.sequence for e in controller.events(ref.session_id)]
            assert audit.seen == everything  # synchronous observers: as before
            assert slow.seen == everything
            (queue,) = controller.delivery.async_observers.values()
            assert queue.dropped == 0 and queue.delivered == len(everything)
            return result, everything

    result, everything = anyio.run(main)
    assert result.status == "completed"
    assert len(everything) >= 50


def test_beyond_its_bound_an_async_observer_loses_events_and_is_reported_once(
    make_controller, workspace, capfd
):
    from tests.core.test_controller import talker

    slow = Gated()

    async def main():
        async with make_controller(talker, slow, observer_queue=3) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            with anyio.fail_after(60):
                result = await controller.run_turn(ref, " ".join(f"w{i}" for i in range(20)))
            everything = [e.sequence for e in controller.events(ref.session_id)]
            (queue,) = controller.delivery.async_observers.values()
            slow.gate.set()
            assert await controller.delivery.observers_idle()
            return result, everything, queue

    result, everything, queue = anyio.run(main)
    assert result.status == "completed"
    # the worker may have taken one event off the queue before stalling: bound + 1 at most
    assert 3 <= len(slow.seen) <= 4
    assert slow.seen == everything[: len(slow.seen)]  # what it saw, it saw in order
    assert queue.dropped == len(everything) - len(slow.seen) > 0
    err = capfd.readouterr().err
    assert err.count("is slow (its queue of 3 is full)") == 1
    assert "Gated@" in err  # named: an unnamed plugin object by class and identity
    # and at close, what it missed (events recorded while the controller closes come after)
    assert err.count("events dropped by its full queue") == 0
    assert err.count(" dropped by its full queue, 0 left at close)") == 1


class Checking:
    """An async observer that reads each event's sequence back from the ledger file through a
    store of its own (another connection sees only what was committed)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: list[int] = []
        self.committed: list[bool] = []

    @hookimpl
    async def on_event(self, event):
        from harness_core.ledger import open_ledger

        store = open_ledger(self.url)
        try:
            self.committed.append(store.last_sequence(event.session_id) >= event.sequence)
        finally:
            store.close()
        self.seen.append(event.sequence)


@harness("pausing-talker")
async def pausing_talker(message, session):
    """Yields to the event loop after each word, as a model's stream does: the observer's
    worker runs while the turn still records."""
    for word in message.content.split():
        yield word
        await anyio.sleep(0)


def test_an_async_observer_is_shown_only_what_the_ledger_made_durable(make_controller, tmp_path):
    """The turn no longer waits for the commit on an async observer's behalf (its events are
    queued as recorded); the observer's worker waits instead, so it never sees an event a crash
    could still lose."""
    url = f"sqlite:///{tmp_path}/ledger.sqlite"
    checking = Checking(url)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def main():
        async with make_controller(pausing_talker, checking, ledger=url) as controller:
            ref = await controller.open_session(harness="pausing-talker", workspace=str(workspace))
            for turn in range(3):
                prompt = " ".join(f"t{turn}w{i}" for i in range(200))
                assert (await controller.run_turn(ref, prompt)).status == "completed"
            await controller.close_session(ref)
            assert await controller.delivery.observers_idle(60)
            return [e.sequence for e in controller.events(ref.session_id)]

    everything = anyio.run(main)
    assert checking.seen == everything
    assert all(checking.committed), checking.committed.index(False)
