"""``run_turn`` drives its turn in the caller's task (no producer task) when no commit wait sits
between events; these check it keeps what the producer keeps, on asyncio and trio: cancel from
another task ends the turn quickly with every process gone, deadlines, a caller that leaves
(``on_event`` raising, an outer cancel) ends the turn cancelled, ordering and exactly one
terminal, redaction, the caller's context variables, and durable-before-returned on SQLite."""

from __future__ import annotations

import contextvars
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import HarnessError
from harness_stdio_jsonl import plugin as stdio_plugin

from harness_core import Controller, harness, plugins_from, proctree
from harness_core.testing import hostile

pytestmark = pytest.mark.anyio
REQUEST = contextvars.ContextVar("request", default="none")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "trio":
        pytest.importorskip("trio")
    return str(request.param)


@harness("inline-stream")
async def stream(message: Any, session: Any) -> Any:
    async def chunks() -> Any:
        for index in range(5):
            yield f"c{index} "
        yield f"sk-live-{'x' * 24} {REQUEST.get()}"

    return chunks()


def gone(pids: list[int], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while any(proctree.read_stat(pid) is not None for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def hostile_controller(tmp_path: Path, ledger: str) -> Controller:
    store = "memory:" if ledger == "memory" else f"sqlite:///{tmp_path}/ledger.sqlite"
    return Controller(
        plugins=plugins_from([stdio_plugin]), ledger=store, state_dir=tmp_path / "state"
    )


async def open_hostile(c: Controller, tmp_path: Path) -> str:
    (tmp_path / "pids").mkdir(exist_ok=True)
    command = [sys.executable, hostile.__file__, "--pids", str(tmp_path / "pids")]
    ref = await c.open_session(
        harness="stdio-jsonl", workspace=str(tmp_path), config={"command": command}
    )
    return ref.session_id


def pids_of(tmp_path: Path) -> list[int]:
    return sorted(int(p.name) for p in (tmp_path / "pids").iterdir())


@pytest.mark.parametrize("ledger", ["memory", "sqlite"])
async def test_cancel_from_another_task_ends_the_turn_and_its_processes(
    tmp_path: Path, ledger: str
) -> None:
    async with hostile_controller(tmp_path, ledger) as c:
        session = await open_hostile(c, tmp_path)
        results: list[Any] = []
        cancelled_at: list[float] = []

        async def run() -> None:
            results.append(await c.run_turn(session, "hang", timeout=60))

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            with anyio.fail_after(20):
                while len(list((tmp_path / "pids").iterdir())) < 2:
                    await anyio.sleep(0.02)
            running = c.active_turn(session)
            assert running is not None
            with pytest.raises(HarnessError):  # run_turn hands its events out itself
                await running.__anext__()
            cancelled_at.append(time.monotonic())
            await c.cancel_turn(session)
        latency = time.monotonic() - cancelled_at[0]
        assert results[0].status == "cancelled"
        assert results[0].events[-1].payload.by == "host"
        assert latency < 2.0
        assert gone(pids_of(tmp_path))
        again = await c.run_turn(session, "complete", timeout=30)  # the session is free
        assert again.status == "completed"


async def test_a_deadline_ends_an_inline_turn(tmp_path: Path) -> None:
    async with hostile_controller(tmp_path, "memory") as c:
        session = await open_hostile(c, tmp_path)
        result = await c.run_turn(session, "hang", timeout=1.0)
        assert (result.status, result.reason) == ("failed", "timeout")
        assert [e.type for e in result.events].count("turn.failed") == 1
        assert gone(pids_of(tmp_path))


async def test_a_caller_that_leaves_cancels_the_turn(tmp_path: Path) -> None:
    async with hostile_controller(tmp_path, "memory") as c:
        session = await open_hostile(c, tmp_path)

        def leave(event: Any) -> None:
            if event.type == "message.delta":
                raise KeyError("the host's own error")

        with pytest.raises(KeyError):
            await c.run_turn(session, "hang", on_event=leave, timeout=60)
        with anyio.move_on_after(1.0):  # an outer cancel, as a host's deadline
            await c.run_turn(session, "hang", timeout=60)
        terminals = [e for e in c.events(session) if e.type.startswith("turn.") and e.turn_id]
        ends = [
            (e.type, getattr(e.payload, "by", None)) for e in terminals if e.type != "turn.started"
        ]
        assert ends == [("turn.cancelled", "host"), ("turn.cancelled", "host")]
        assert gone(pids_of(tmp_path))
        assert (await c.run_turn(session, "complete", timeout=30)).status == "completed"


async def test_order_one_terminal_redaction_and_context(tmp_path: Path) -> None:
    async with Controller(plugins=plugins_from([stream]), ledger="memory:") as c:
        ref = await c.open_session(harness="inline-stream", workspace=str(tmp_path))
        seen: list[Any] = []
        REQUEST.set("req-7")
        result = await c.run_turn(ref, "go", on_event=seen.append)
        assert seen == list(result.events)
        assert [e.sequence for e in seen] == list(range(seen[0].sequence, seen[-1].sequence + 1))
        types = [e.type for e in seen]
        assert types[0] == "turn.started" and types[-1] == "turn.completed"
        assert sum(t.startswith("turn.") and t != "turn.started" for t in types) == 1
        assert result.text is not None and result.text.endswith("req-7")  # the caller's context
        assert "sk-live-" + "x" * 24 not in repr(c.events(ref.session_id))  # redacted


async def test_an_inline_sqlite_turn_is_on_disk_when_run_turn_returns(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    async with Controller(plugins=plugins_from([stream]), ledger=f"sqlite:///{path}") as c:
        ref = await c.open_session(harness="inline-stream", workspace=str(tmp_path))
        result = await c.run_turn(ref, "go")
        with sqlite3.connect(path) as other:  # another connection: only what was committed
            (count,) = other.execute(
                "SELECT count(*) FROM events WHERE session_id = ?", (ref.session_id,)
            ).fetchone()
        assert count >= len(result.events) + 1  # session.opened and the whole turn
