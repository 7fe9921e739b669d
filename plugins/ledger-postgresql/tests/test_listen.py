"""The LISTEN/NOTIFY tail: live, in order, and catching up after its connection is killed."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import anyio
import psycopg
import pytest
from harness_hookspecs import Event

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import event
from ledger_postgresql.store import PostgresStore


def write_slowly(url: str, session_id: str, count: int, pause: float) -> None:
    store = PostgresStore(url)
    try:
        for sequence in range(1, count + 1):
            store.append([event(sequence, session_id=session_id)])
            store.flush()
            time.sleep(pause)
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_tail_wakes_on_notify_and_ignores_other_sessions(
    postgresql_ledger_url: str, backend: str
) -> None:
    url = postgresql_ledger_url
    reader = PostgresStore(url)
    noise = threading.Thread(target=write_slowly, args=(url, "other", 60, 0.002))
    writer = threading.Thread(target=write_slowly, args=(url, "s1", 60, 0.004))

    async def main() -> list[Event]:
        seen: list[Event] = []
        with anyio.fail_after(60):
            async for item in reader.tail("s1"):
                seen.append(item)
                if len(seen) == 60:
                    break
        return seen

    noise.start()
    writer.start()
    try:
        seen = anyio.run(main, backend=backend)
    finally:
        writer.join()
        noise.join()
    assert [e.sequence for e in seen] == list(range(1, 61))
    assert reader.listeners == []  # the tail's connection closed with the iterator
    reader.close()


def test_tail_catches_up_after_its_connection_is_terminated(postgresql_ledger_url: str) -> None:
    url = postgresql_ledger_url
    reader, writer = PostgresStore(url), PostgresStore(url)
    killed: list[int] = []

    async def main() -> list[Event]:
        seen: list[Event] = []

        async def write() -> None:
            for sequence in range(2, 201):
                writer.append([event(sequence)])
                if sequence % 10 == 0:
                    await anyio.to_thread.run_sync(writer.flush)
                if sequence == 80:  # kill the listening connection mid-stream
                    pid = reader.listeners[0].backend_pid()
                    assert pid is not None
                    with psycopg.connect(url, autocommit=True) as admin:
                        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    killed.append(pid)
                await anyio.sleep(0.001)
            await anyio.to_thread.run_sync(writer.flush)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                async for item in reader.tail("s1"):
                    if not seen:
                        tasks.start_soon(write)
                    seen.append(item)
                    if len(seen) == 200:
                        break
        return seen

    writer.append([event(1)])  # so the tail starts with one event and then starts the writer
    writer.flush()
    try:
        seen = anyio.run(main)
    finally:
        reader.close()
        writer.close()
    assert killed, "the listener was never terminated"
    assert [e.sequence for e in seen] == list(range(1, 201))
