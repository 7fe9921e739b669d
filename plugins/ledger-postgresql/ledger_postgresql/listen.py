"""The live tail of a PostgreSQL ledger: LISTEN/NOTIFY, with polling as the backstop.

Each tail has its own listening connection (LISTEN is per connection). The order that loses
nothing: listen first, then read what is committed, then wait for a notification naming the
session (or the backstop interval) and read again. When the listening connection dies (the
server restarted, ``pg_terminate_backend``) the wait returns at once; the tail reconnects,
listens again and reads everything committed meanwhile, so it catches up.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio.to_thread
import psycopg
from harness_hookspecs import Event

from harness_core.ledger.tail import PAGE

from .schema import CHANNEL


class PostgresStore(Protocol):
    """What a live tail needs of :class:`~.store.PostgresStore` (a protocol: the store imports
    this module, so this one does not import the store)."""

    url: str
    listeners: list[Listener]

    def read_events(self, session_id: str, after: int, limit: int | None) -> list[Event]: ...


#: Seconds between reads when no notification came (and the longest a cancelled tail waits).
BACKSTOP = 0.5


class Listener:
    """One LISTEN connection, reopened when it dies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.connection: psycopg.Connection[Any] | None = None

    def listen(self) -> bool:
        """Connect and LISTEN when not connected; ``False`` when the server can't be reached."""
        if self.connection is not None and not self.connection.closed:
            return True
        try:
            self.connection = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            self.connection.execute(f"LISTEN {CHANNEL}")
            return True
        except psycopg.Error:
            self.close()
            return False

    def wait(self, session_id: str, timeout: float) -> None:
        """Return when ``session_id`` got events, the connection died, or ``timeout`` passed."""
        if not self.listen():
            time.sleep(timeout)  # the server is away: poll at the backstop pace
            return
        assert self.connection is not None
        try:
            for notify in self.connection.notifies(timeout=timeout):
                if notify.payload == session_id:
                    return
        except psycopg.Error:
            self.close()  # the next wait reconnects; the caller reads what it missed

    def close(self) -> None:
        if self.connection is not None:
            try:
                self.connection.close()
            except psycopg.Error:
                pass
            self.connection = None

    def backend_pid(self) -> int | None:
        """The server process of the listening connection (tests terminate it)."""
        connection = self.connection
        return None if connection is None or connection.closed else connection.info.backend_pid


async def tail(
    store: PostgresStore, session_id: str, *, after: int = 0, backstop: float = BACKSTOP
) -> AsyncIterator[Event]:
    """Yield the session's events after ``after`` in order, as writers commit them."""
    listener = Listener(store.url)
    store.listeners.append(listener)
    last = after
    try:
        await anyio.to_thread.run_sync(listener.listen)
        while True:
            events = await anyio.to_thread.run_sync(store.read_events, session_id, last, PAGE)
            for event in events:
                if event.sequence > last:
                    last = event.sequence
                    yield event
            if len(events) < PAGE:
                await anyio.to_thread.run_sync(listener.wait, session_id, backstop)
    finally:
        store.listeners.remove(listener)
        listener.close()
