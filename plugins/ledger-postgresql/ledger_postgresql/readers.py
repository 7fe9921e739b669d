"""The connections a store's reads use: a small pool that forgets a connection once it fails.

Not ``psycopg_pool``: after a server restart its background reconnection backs off on its own
schedule (1 s, 2 s, 4 s ...) behind the caller's back; here a read that finds no idle
connection opens one itself, inside the caller's retry window (:mod:`.outage`), so a read
succeeds as soon as the server accepts connections again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg

#: Seconds to wait for a TCP connection before the attempt counts as failed (then retried).
CONNECT_TIMEOUT = 5


class Readers:
    """Up to ``size`` idle autocommit connections to ``url``, shared by threads."""

    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self.size = size
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._closed = False

    def query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one statement and fetch its rows (a failed connection is closed, not kept)."""
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            connection = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        try:
            rows = connection.execute(sql, args).fetchall()
        except BaseException:
            connection.close()
            raise
        with self._lock:
            if not self._closed and len(self._idle) < self.size:
                self._idle.append(connection)
                connection = None
        if connection is not None:
            connection.close()
        return rows

    def backend_pids(self) -> list[int]:
        """The server processes of the idle connections (tests terminate them)."""
        with self._lock:
            return [c.info.backend_pid for c in self._idle if not c.closed]

    def discard(self) -> None:
        """Close the idle connections (after a failure: they likely died with the server)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.discard()
