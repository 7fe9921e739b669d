"""The live tail (``harness_core.ledger.tail.follow``) on every store, under asyncio and trio."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import Event, LedgerStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ledger_samples import KINDS, make_event, open_store, url_for

from harness_core.ledger.tail import follow

HELPERS = str(Path(__file__).resolve().parent)


async def collect(store: LedgerStore, count: int, *, after: int = 0) -> list[Event]:
    seen: list[Event] = []
    with anyio.fail_after(30):
        async for event in follow(store, "sess-1", after=after):
            seen.append(event)
            if len(seen) == count:
                break
    return seen


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_tail_sees_backlog_then_live_appends_in_order(store: LedgerStore, backend: str) -> None:
    store.append([make_event(i) for i in range(1, 6)])
    store.flush()

    async def main() -> list[Event]:
        async def write() -> None:
            for sequence in range(6, 41):
                await anyio.sleep(0.002)
                store.append((make_event(sequence),))
                await anyio.to_thread.run_sync(store.flush)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write)
            seen = await collect(store, 38, after=2)
        return seen

    seen = anyio.run(main, backend=backend)
    assert [e.sequence for e in seen] == list(range(3, 41))
    assert seen == store.events("sess-1", after=2)


WRITER = """
import sys, time
sys.path.insert(0, {helpers!r})
from ledger_samples import KINDS, make_event, open_store, url_for
from harness_core.ledger import open_ledger
from harness_core.plugins import get_plugins
store = open_ledger({url!r}, schemes=get_plugins().ledger_schemes)
for sequence in range(1, 201):
    store.append((make_event(sequence),))
    if sequence % 7 == 0:
        store.flush()
        time.sleep(0.005)
store.close()
"""


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "memory"])
def test_tail_follows_another_process(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """200/200 events another process writes, in order, each once."""
    url = url_for(kind, tmp_path, request)
    reader = open_store(url)  # created first: the JSONL directory and SQLite schema exist
    code = textwrap.dedent(WRITER).format(helpers=HELPERS, url=url)
    writer = subprocess.Popen([sys.executable, "-c", code])
    try:
        seen = anyio.run(collect, reader, 200)
    finally:
        assert writer.wait(timeout=60) == 0
        reader.close()
    assert [e.sequence for e in seen] == list(range(1, 201))
    assert [e.event_id for e in seen] == [f"ev_sess-1_{i}" for i in range(1, 201)]
