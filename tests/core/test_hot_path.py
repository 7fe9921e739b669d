"""What the hot-path shortcuts (issue 19) must keep: a session sweeps /proc for its processes
only once it spawned, its state dir exists once anybody asks for it, a plugin answering a hook
still answers when the runtime calls its own implementation directly, a close with nothing to
wait for (no shield scope) still closes the session whole for a cancelled caller, and the SQLite
store's staged writes are on disk once a flush returns."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from harness_hookspecs import (
    CloseSessionRequest,
    Event,
    HarnessError,
    MessageDelta,
    SandboxHandle,
    SandboxRequest,
    SessionRecord,
    SessionRef,
    hookimpl,
)

from harness_core import Controller, harness, plugins_from, proctree
from harness_core.controller import closed_record
from harness_core.ledger.sqlite import STAGED_MAX, SqliteStore

pytestmark = pytest.mark.anyio


@harness("hot-reply")
async def reply(message: Any, session: Any) -> str:
    return "ok"


@harness("hot-spawn")
async def spawner(message: Any, session: Any) -> str:
    process = await session.spawn(["true"])
    await process.wait()
    return "spawned"


@harness("hot-spawn-fails")
async def failing_spawner(message: Any, session: Any) -> str:
    try:
        await session.spawn(["/nonexistent/harness-test-program"])
    except HarnessError:
        return "failed"
    return "spawned"


@harness("hot-state")
async def state_user(message: Any, session: Any) -> str:
    return str(session.context.state_dir)


def counting_sweeps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    tags: list[str] = []
    real = proctree.kill_all

    def kill_all(leaders: Any, tag: str, **kwargs: Any) -> set[int]:
        tags.append(tag)
        return real(leaders, tag, **kwargs)

    monkeypatch.setattr(proctree, "kill_all", kill_all)
    return tags


async def test_a_session_that_never_spawned_skips_the_proc_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweeps = counting_sweeps(monkeypatch)
    async with Controller(
        plugins=plugins_from([reply, spawner]), ledger="memory:", state_dir=tmp_path
    ) as controller:
        quiet = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        assert (await controller.run_turn(quiet, "hi")).ok
        await controller.close_session(quiet)
        assert sweeps == []
        busy = await controller.open_session(harness="hot-spawn", workspace=str(tmp_path))
        assert (await controller.run_turn(busy, "hi")).text == "spawned"
        await controller.close_session(busy)
    # only the session that spawned is swept, once: its process's own tag when it was
    # terminated (the close has nothing left to find: the spawn returned its Process)
    assert len(sweeps) == 1 and not sweeps[0].endswith(".")


async def test_a_session_whose_spawn_failed_is_swept_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawn that raised has no Process to terminate (it may have started a child): the
    close sweeps the session's tag."""
    sweeps = counting_sweeps(monkeypatch)
    async with Controller(
        plugins=plugins_from([failing_spawner]), ledger="memory:", state_dir=tmp_path
    ) as controller:
        ref = await controller.open_session(harness="hot-spawn-fails", workspace=str(tmp_path))
        assert (await controller.run_turn(ref, "hi")).text == "failed"
        assert sweeps == []
        await controller.close_session(ref)
    assert len(sweeps) == 1 and sweeps[0].endswith(".")


async def test_the_state_dir_is_made_on_first_use(tmp_path: Path) -> None:
    root = tmp_path / "state"
    async with Controller(
        plugins=plugins_from([reply, state_user]), ledger="memory:", state_dir=root
    ) as controller:
        quiet = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        assert not (root / "hot-reply").exists()  # the direct sandbox binds nothing
        await controller.close_session(quiet)
        user = await controller.open_session(harness="hot-state", workspace=str(tmp_path))
        result = await controller.run_turn(user, "where")
        assert result.text is not None and os.path.isdir(result.text)
        assert Path(result.text).parent == root / "hot-state"


class RecordingSandbox:
    """A plugin answering ``sandbox_provision`` itself (before the runtime's dispatch)."""

    def __init__(self) -> None:
        self.requests: list[SandboxRequest] = []

    @hookimpl
    async def sandbox_provision(self, request: SandboxRequest) -> SandboxHandle:
        self.requests.append(request)
        return SandboxHandle(provider="direct", workspace=request.workspace)


async def test_a_plugin_answering_a_hook_is_still_asked(tmp_path: Path) -> None:
    plugins = plugins_from([reply])
    async with Controller(plugins=plugins, ledger="memory:", state_dir=tmp_path) as controller:
        first = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        sandbox = RecordingSandbox()
        plugins.register(sandbox)  # registered while the controller runs
        second = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        assert [r.session_id for r in sandbox.requests] == [second.session_id]
        # a plugin may bind the state dir: it exists before provisioning
        assert os.path.isdir(sandbox.requests[0].state_dir or "")
        for ref in (first, second):
            await controller.close_session(ref)


class SlowClose:
    """Answers the adapter close with a coroutine that waits, and notes when it finished."""

    def __init__(self) -> None:
        self.finished: list[str] = []

    @hookimpl(tryfirst=True)
    def harness_close_session(self, request: CloseSessionRequest, context: Any) -> Any:
        async def close() -> None:
            await anyio.sleep(0.01)
            self.finished.append(request.session.session_id)

        return close()


@pytest.mark.parametrize("slow_close", [False, True])
async def test_a_cancelled_caller_still_closes_the_session_whole(
    tmp_path: Path, slow_close: bool
) -> None:
    slow = SlowClose()
    plugins = plugins_from([reply, slow] if slow_close else [reply])
    async with Controller(plugins=plugins, ledger="memory:", state_dir=tmp_path) as controller:
        ref = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        assert (await controller.run_turn(ref, "hi")).ok
        with anyio.CancelScope() as scope:
            scope.cancel()  # the caller is cancelled before it closes
            await controller.close_session(ref)
        record = controller.ledger.get_session(ref.session_id)
        assert record is not None and record.status == "closed"
        assert controller.events(ref.session_id)[-1].type == "session.closed"
        assert not controller.ledger.claimed(ref.session_id)  # type: ignore[attr-defined]
        assert slow.finished == ([ref.session_id] if slow_close else [])


def test_the_closed_record_keeps_every_other_field() -> None:
    ref = SessionRef(harness="hot-reply", target="local", session_id="s1")
    record = SessionRecord(
        ref=ref,
        status="open",
        created_at="2026-01-01T00:00:00.000000Z",
        updated_at="2026-01-01T00:00:00.000000Z",
        workspace="/w",
        model="m",
        posture="strict",
        agent="a",
        user="u",
        config={"command": ["c"]},
        parent_session_id="p1",
        parent_event_id="p1:3",
        vendor_session_id="thread-1",
        imported=True,
    )
    # every field set to a value of its own: a field added later and not copied shows here
    assert {a.name for a in attrs.fields(SessionRecord)} == {
        "ref", "status", "created_at", "updated_at", "workspace", "model", "posture", "agent",
        "user", "config", "parent_session_id", "parent_event_id", "vendor_session_id",
        "imported",
    }  # fmt: skip
    stamp = "2026-01-02T00:00:00.000000Z"
    assert closed_record(record, stamp) == attrs.evolve(record, status="closed", updated_at=stamp)


def delta(sequence: int) -> Event:
    payload = MessageDelta(text=f"d{sequence}")
    return Event(
        event_id=f"ev_hot_{sequence}",
        sequence=sequence,
        session_id="hot-session",
        turn_id="turn_hot",
        harness="hot-reply",
        timestamp="2026-01-01T00:00:00.000000Z",
        type=payload.TYPE,
        payload=payload,
    )


def stored(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def test_staged_sqlite_writes_are_on_disk_when_a_flush_returns(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    try:
        total = STAGED_MAX * 2 + 7  # full stages go to the writer early, the rest at the flush
        for sequence in range(1, total + 1):
            store.append((delta(sequence),))
        store.flush()
        assert stored(path) == total  # another connection sees every row
        assert [e.sequence for e in store.events("hot-session")] == list(range(1, total + 1))
        store.append((delta(total + 1),))
    finally:
        store.close()
    assert stored(path) == total + 1  # close flushes what is staged


def test_a_flush_waits_out_another_process_lock_then_is_on_disk(tmp_path: Path) -> None:
    # A small flush commits in the calling thread, but never waits for a lock itself: while
    # another connection holds the write lock, the writer thread takes the stage and the flush
    # returns once it committed.
    import threading

    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    other = sqlite3.connect(path, isolation_level=None)
    try:
        store.append((delta(1),))
        store.flush()
        other.execute("BEGIN IMMEDIATE")  # holds the write lock
        store.append((delta(2),))
        flushed = threading.Event()
        flusher = threading.Thread(target=lambda: (store.flush(), flushed.set()))
        flusher.start()
        assert not flushed.wait(0.3)  # still locked: the flush waits for the writer thread
        other.execute("COMMIT")
        assert flushed.wait(10)
        flusher.join()
        assert stored(path) == 2
    finally:
        other.close()
        store.close()


def frames_after(events: int, flush_every: int, path: Path) -> int:
    """Append ``events`` deltas to a new store, flushing every ``flush_every``; then the WAL
    frames written since SQLite last reused the WAL (what checkpoints keep small)."""
    store = SqliteStore(str(path))
    try:
        for sequence in range(1, events + 1):
            store.append((delta(sequence),))
            if sequence % flush_every == 0:
                store.flush()
        with sqlite3.connect(path) as connection:
            frames = int(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
        assert stored(path) == events
        return frames
    finally:
        store.close()


def test_commits_made_by_flushes_are_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Flush-made commits never checkpoint themselves (no fsync on the caller); the writer
    # thread checkpoints after every CHECKPOINT_EVERY of them (holding them back once the WAL
    # is past WAL_PAGES_MAX), so the WAL is reused and stays small instead of growing with
    # every commit.
    from harness_core.ledger import sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", 10)
    monkeypatch.setattr(sqlite_module, "WAL_PAGES_MAX", 50)
    frames = frames_after(600, 1, tmp_path / "ledger.sqlite")
    assert frames < 600, frames  # without checkpoints: 600 commits of 2-3 pages each


def test_commits_of_the_writer_thread_are_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer thread checkpoints after CHECKPOINT_ROWS events of its own commits (outside
    # any commit a flush waits for): a long stream keeps reusing a small WAL. (More than a
    # flush commits itself: the writer thread commits these.)
    from harness_core.ledger import sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "CHECKPOINT_ROWS", 1_000)
    frames = frames_after(20_000, 100, tmp_path / "ledger.sqlite")
    assert frames < 400, frames  # without checkpoints: ~2,800 (200 commits of 14 pages)


def test_a_refused_write_in_a_small_flush_keeps_the_good_ones(tmp_path: Path) -> None:
    # A flush-made commit that SQLite refuses is rolled back and handed to the writer thread,
    # which keeps every good row and reports the refused one at this flush.
    import attrs
    from harness_hookspecs import HarnessError

    path = tmp_path / "ledger.sqlite"
    store = SqliteStore(str(path))
    try:
        store.append((delta(1),))
        store.flush()
        store.append((attrs.evolve(delta(1), session_id="other"),))  # a used event id
        store.append((delta(2),))
        with pytest.raises(HarnessError) as failed:
            store.flush()
        assert failed.value.reason == "ledger-failed"
        assert stored(path) == 2
        assert [e.sequence for e in store.events("hot-session")] == [1, 2]
    finally:
        store.close()


async def test_a_named_turn_on_a_live_session_reads_no_events_unless_the_id_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller naming each turn (a Temporal worker does) paid a read of the whole session per
    turn to tell a new turn from a retry; the live session knows its turn ids (from the open,
    or the resume's one read), and only a known id is looked up."""
    reads: list[str] = []
    real = SqliteStore.events

    def counted(self: SqliteStore, session_id: str, **kwargs: Any) -> list[Event]:
        reads.append(session_id)
        return real(self, session_id, **kwargs)

    monkeypatch.setattr(SqliteStore, "events", counted)
    store = SqliteStore(str(tmp_path / "l.sqlite"))
    async with Controller(plugins=plugins_from([reply]), ledger=store) as controller:
        ref = await controller.open_session(harness="hot-reply", workspace=str(tmp_path))
        for number in range(3):
            assert (await controller.run_turn(ref, "hi", turn_id=f"turn_{number}")).ok
        assert reads == []
        with pytest.raises(HarnessError) as ended:  # a known id: the ledger says it ended
            await controller.run_turn(ref, "again", turn_id="turn_1", attempt=2)
        assert ended.value.reason == "invalid-request" and "already ended" in str(ended.value)
        assert reads == [ref.session_id]
        with pytest.raises(HarnessError) as bad:  # a new id still has its attempt checked
            await controller.run_turn(ref, "hi", turn_id="turn_new", attempt=0)
        assert bad.value.reason == "invalid-request"
    async with Controller(plugins=plugins_from([reply]), ledger=store) as controller:
        await controller.resume_session(ref.session_id)
        reads.clear()
        assert (await controller.run_turn(ref, "hi", turn_id="turn_3")).ok
        assert reads == []  # the resume's read told it the turns
        with pytest.raises(HarnessError) as ended:
            await controller.run_turn(ref, "again", turn_id="turn_0", attempt=2)
        assert "already ended" in str(ended.value)
    store.close()
