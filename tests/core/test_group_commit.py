"""Durable before delivered, with many waiters: turns streaming at once share the ledger's
commits (one wait for the ledger under way at a time), and a caller that stops waiting for a
commit takes nothing away from the observers."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from harness_core import Controller, harness, hookimpl, plugins_from
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
