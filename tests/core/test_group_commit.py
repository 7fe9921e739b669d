"""Durable before delivered, with many waiters: turns streaming at once share the ledger's
commits (one wait for the ledger under way at a time), and a caller that stops waiting for a
commit takes nothing away from the observers."""

from __future__ import annotations

import random
from collections.abc import Callable

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from harness_core import Controller, harness, hookimpl, plugins_from
from harness_core.delivery import Delivery
from harness_core.ledger.sqlite import SqliteStore


class CountingStore(SqliteStore):
    """The SQLite store, counting the flushes delivery asks for; ``hold`` parks them (the
    ledger is slow to commit) until :meth:`let_go`."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.flushes = 0
        self.hold = False
        self.parked: list[Callable[[], object]] = []

    def flush_notify(self, callback: Callable[[], object]) -> bool:
        self.flushes += 1
        if self.hold:
            self.parked.append(callback)
            return True
        return super().flush_notify(callback)

    def let_go(self) -> None:
        self.hold = False
        for callback in self.parked:
            if not super().flush_notify(callback):
                callback()
        self.parked.clear()


class Audit:
    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    @hookimpl
    def on_event(self, event):
        self.seen.append((event.session_id, event.sequence))


def streamer(deltas: int):
    @harness("streamer")
    async def stream(message, session):
        for index in range(deltas):
            yield f"d{index} "
            await anyio.sleep(0)

    return stream


def test_turns_streaming_at_once_share_the_ledgers_commits(tmp_path):
    turns, deltas = 40, 25
    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    audit = Audit()

    async def one(controller, ref):
        got = []
        async with controller.turn(ref, "go") as turn:
            async for event in turn:
                got.append(event.sequence)
        assert turn.result().status == "completed"
        return got

    async def main():
        async with Controller(
            plugins=plugins_from([streamer(deltas), audit]), ledger=store, state_dir=tmp_path
        ) as controller:
            refs = [
                await controller.open_session(harness="streamer", workspace=tmp_path)
                for _ in range(turns)
            ]
            store.flushes = 0
            seen: dict[str, list[int]] = {}

            async def run(ref):
                seen[ref.session_id] = await one(controller, ref)

            async with anyio.create_task_group() as group:
                for ref in refs:
                    group.start_soon(run, ref)
            return refs, seen, [controller.events(ref.session_id) for ref in refs]

    try:
        refs, seen, recorded = anyio.run(main)
    finally:
        store.close()
    handed_out = sum(len(got) for got in seen.values())
    assert handed_out >= turns * (deltas + 2)
    # Each caller got its turn's events in order, and so did the observer.
    for ref, events in zip(refs, recorded, strict=True):
        mine = [e.sequence for e in events if e.turn_id is not None]
        assert seen[ref.session_id] == mine
        observed = [s for sid, s in audit.seen if sid == ref.session_id]
        assert observed == [e.sequence for e in events]
    # One wait for the ledger at a time, shared by every caller that needs it meanwhile.
    # (here: 82 flushes for 1,120 events; a wait per caller made 160)
    assert store.flushes <= handed_out // 8, (store.flushes, handed_out)


def test_a_caller_that_stops_waiting_for_a_commit_costs_the_observers_nothing(tmp_path):
    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    audit = Audit()

    async def main():
        async with Controller(
            plugins=plugins_from([streamer(5), audit]), ledger=store, state_dir=tmp_path
        ) as controller:
            ref = await controller.open_session(harness="streamer", workspace=tmp_path)
            got = []
            async with controller.turn(ref, "go") as turn:
                store.hold = True  # the next commit is slow ...
                with anyio.move_on_after(0.3) as scope:
                    async for event in turn:  # ... and the caller gives up waiting for it
                        got.append(event.sequence)
                assert scope.cancelled_caught and not got and store.parked
                store.let_go()
                async for event in turn:
                    got.append(event.sequence)
            assert turn.result().status == "completed"
            await controller.close_session(ref)
            return got, controller.events(ref.session_id)

    try:
        got, events = anyio.run(main)
    finally:
        store.close()
    assert got == [e.sequence for e in events if e.turn_id is not None]
    # Every event reached the observer once, in order: none went with the abandoned wait.
    assert [s for _, s in audit.seen] == [e.sequence for e in events]


def _backlog_seen(tmp_path, max_backlog):
    """The most events recorded ahead of the ledger's commits that any harness saw, with 20
    turns streaming 150 deltas each at once."""
    store = SqliteStore(str(tmp_path / "ledger.sqlite"))
    seen = [0]
    holder: list[Controller] = []

    @harness("watcher")
    async def watcher(message, session):
        for index in range(150):
            seen[0] = max(seen[0], holder[0].delivery.backlog)
            yield f"d{index} "

    async def one(controller, ref):
        async with controller.turn(ref, "go") as turn:
            async for _ in turn:
                pass
        assert turn.result().status == "completed"

    async def main():
        async with Controller(
            plugins=plugins_from([watcher]),
            ledger=store,
            state_dir=tmp_path,
            max_backlog=max_backlog,
        ) as controller:
            holder.append(controller)
            refs = [
                await controller.open_session(harness="watcher", workspace=tmp_path)
                for _ in range(20)
            ]
            async with anyio.create_task_group() as group:
                for ref in refs:
                    group.start_soon(one, controller, ref)
            return [len(controller.events(ref.session_id)) for ref in refs]

    try:
        counts = anyio.run(main)
    finally:
        store.close()
    assert all(count >= 152 for count in counts)  # every turn ran to its end, nothing lost
    return seen[0]


def test_max_backlog_paces_the_harnesses_by_the_ledger(tmp_path):
    # A turn checks before it asks its harness for more: at most one event per turn beyond.
    assert _backlog_seen(tmp_path / "bounded", 50) <= 50 + 20
    assert _backlog_seen(tmp_path / "free", None) > 200  # without it the turns run far ahead


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_max_backlog_is_at_least_one_event(bad):
    with pytest.raises(ValueError, match="max_backlog is at least one event, a whole number"):
        Controller(plugins=plugins_from([]), ledger="memory:", max_backlog=bad)


def _mixed_turns(tmp_path, max_backlog, seed, backend):
    """40 turns at once under ``max_backlog``: fast streamers, ones that pause between deltas
    (a model thinking), ones that stop early, and callers that give up part-way. Returns each
    turn's status and how many deltas the ledger holds for each session."""
    store = SqliteStore(str(tmp_path / f"ledger-{max_backlog}-{seed}.sqlite"))
    chance = random.Random(seed)
    plans = [(chance.choice("fpsc"), chance.randint(1, 120)) for _ in range(40)]

    @harness("mixed")
    async def mixed(message, session):
        kind, deltas = plans[int(message.content)]
        for index in range(deltas):
            if kind == "p" and index % 7 == 0:
                await anyio.sleep(chance.random() / 50)
            if kind == "s" and index == deltas // 2:
                return
            yield f"d{index} "

    async def one(controller, ref, number, statuses):
        kind = plans[number][0]
        async with controller.turn(ref, str(number)) as turn:
            with anyio.move_on_after(0.05 if kind == "c" else 60):
                async for _ in turn:
                    pass
            if kind == "c":
                await turn.cancel()
        statuses[number] = turn.result().status

    async def main():
        statuses: dict[int, str] = {}
        async with Controller(
            plugins=plugins_from([mixed]), ledger=store, state_dir=tmp_path, max_backlog=max_backlog
        ) as controller:
            refs = [
                await controller.open_session(harness="mixed", workspace=tmp_path) for _ in plans
            ]
            with anyio.fail_after(60):  # a producer left waiting for room nobody makes hangs
                async with anyio.create_task_group() as group:
                    for number, ref in enumerate(refs):
                        group.start_soon(one, controller, ref, number, statuses)
            counts = [
                sum(e.type == "message.delta" for e in controller.events(ref.session_id))
                for ref in refs
            ]
        return statuses, counts

    try:
        statuses, counts = anyio.run(main, backend=backend)
    finally:
        store.close()
    return plans, statuses, counts


@pytest.mark.parametrize("max_backlog", [1, 7, 64])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])  # trio: the store's flush on a thread
def test_turns_paced_by_the_ledger_all_end_whatever_their_harnesses_do(
    tmp_path, max_backlog, seed, backend
):
    plans, statuses, counts = _mixed_turns(tmp_path, max_backlog, seed, backend)
    assert len(statuses) == len(plans)
    for number, (kind, deltas) in enumerate(plans):
        status, count = statuses[number], counts[number]
        if kind in "fp":  # fast, pausing: every delta recorded
            assert (status, count) == ("completed", deltas)
        elif kind == "s":  # stops half-way: what it yielded, then its end
            assert (status, count) == ("completed", deltas // 2)
        else:  # the caller gave up and cancelled: nothing past the cancel
            assert status in ("completed", "cancelled") and count <= deltas


def test_a_producer_waiting_for_room_goes_when_a_full_flush_commits_everything(tmp_path):
    # A wait for the ledger hands the next one to a turn still waiting (mark 8); a full flush
    # (a turn's end) commits everything before that turn runs, so it needs no wait and runs
    # none. The producer waiting for room must still be let go: nothing is left to commit.
    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    ended: list[str] = []

    async def then(name, wait, *args):
        await wait(*args)
        ended.append(name)

    async def main():
        delivery = Delivery(store, None, [], max_backlog=3)
        store.hold = True
        for _ in range(5):
            delivery.recorded(None)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(then, "first", delivery.durable_through, 5)  # runs the wait
                await wait_all_tasks_blocked()
                for _ in range(3):
                    delivery.recorded(None)
                group.start_soon(then, "second", delivery.durable_through, 8)
                group.start_soon(then, "flush", delivery.flush)
                group.start_soon(then, "producer", delivery.make_room)
                await wait_all_tasks_blocked()
                assert ended == [] and len(store.parked) == 2
                store.let_go()
                await checkpoint()
        return delivery.backlog

    try:
        backlog = anyio.run(main)
    finally:
        store.close()
    assert sorted(ended) == ["first", "flush", "producer", "second"] and backlog == 0


@pytest.mark.parametrize(
    ("max_backlog", "shares"),
    [
        (10, [10, 1, 1]),  # room for 10: one producer goes, with all of it
        (600, [256, 256, 1, 1]),  # room for 600: two go with a full share each (PACED_SHARE)
    ],
)
def test_a_commit_lets_go_as_many_producers_as_it_made_room_for(tmp_path, max_backlog, shares):
    # The others stay in line (a commit does not wake every producer to find the room gone);
    # once nobody records, they go too.
    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    got: dict[int, int] = {}

    async def producer(number, delivery):
        got[number] = await delivery.make_room()

    async def main():
        delivery = Delivery(store, None, [], max_backlog=max_backlog)
        store.hold = True
        for _ in range(max_backlog):
            delivery.recorded(None)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(delivery.durable_through, max_backlog)  # a commit under way
                await wait_all_tasks_blocked()
                for number in range(len(shares)):
                    group.start_soon(producer, number, delivery)
                    await wait_all_tasks_blocked()
                assert got == {}
                store.let_go()

    try:
        anyio.run(main)
    finally:
        store.close()
    assert [got[n] for n in range(len(shares))] == shares
    let_go = len(shares) - shares.count(1)  # those the commit let go were done first
    assert set(list(got)[:let_go]) == {n for n, share in enumerate(shares) if share > 1}


async def _two_checkpoints():
    # (asyncio) the store's callback wakes the commit's task, whose end wakes the next ones
    await checkpoint()
    await checkpoint()


@pytest.mark.parametrize("when", ["in line", "let go"])
def test_producers_waiting_for_room_go_when_the_first_in_line_is_cancelled(tmp_path, when):
    # Cancelled while in line, or just as the commit let it go (to run the next commit): the
    # producer behind it must go all the same.
    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    ended: list[str] = []

    async def main():
        delivery = Delivery(store, None, [], max_backlog=3)
        store.hold = True
        for _ in range(3):
            delivery.recorded(None)
        scope = anyio.CancelScope()

        async def first():
            with scope:
                await delivery.make_room()
            ended.append("cancelled" if scope.cancelled_caught else "first")

        async def second():
            await delivery.make_room()
            ended.append("second")

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(delivery.durable_through, 3)  # the commit under way
                await wait_all_tasks_blocked()
                group.start_soon(first)
                await wait_all_tasks_blocked()
                group.start_soon(second)
                await wait_all_tasks_blocked()
                if when == "in line":
                    scope.cancel()
                    await wait_all_tasks_blocked()
                store.let_go()
                if when == "let go":
                    await _two_checkpoints()
                    scope.cancel()

    try:
        anyio.run(main)
    finally:
        store.close()
    assert ended == ["cancelled", "second"]


@pytest.mark.parametrize("when", ["in line", "woken"])
def test_the_next_commit_runs_when_the_turn_to_run_it_is_cancelled(tmp_path, when):
    # Two turns need the commit after the one under way; the first of them, to run it, is
    # cancelled while in line or once woken to run it (asyncio's own cancel - asyncio.timeout,
    # task.cancel() - reaches a task already woken): the other must still get it.
    import asyncio

    store = CountingStore(str(tmp_path / "ledger.sqlite"))
    ended: list[str] = []

    async def main():
        delivery = Delivery(store, None, [], max_backlog=None)
        store.hold = True
        for _ in range(2):
            delivery.recorded(None)
        tasks = []

        async def runner():
            tasks.append(asyncio.current_task())
            try:
                await delivery.durable_through(4)
            except asyncio.CancelledError:
                ended.append("cancelled")
            else:
                ended.append("runner")

        async def other():
            await delivery.durable_through(4)
            ended.append("other")

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(delivery.durable_through, 2)  # the commit under way
                await wait_all_tasks_blocked()
                for _ in range(2):
                    delivery.recorded(None)
                group.start_soon(runner)
                await wait_all_tasks_blocked()
                group.start_soon(other)
                await wait_all_tasks_blocked()
                if when == "in line":
                    tasks[0].cancel()
                    await wait_all_tasks_blocked()
                store.let_go()
                if when == "woken":
                    await _two_checkpoints()
                    tasks[0].cancel()
        return delivery.backlog

    try:
        backlog = anyio.run(main)
    finally:
        store.close()
    assert ended == ["cancelled", "other"] and backlog == 0
