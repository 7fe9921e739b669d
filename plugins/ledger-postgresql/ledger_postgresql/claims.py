"""Who writes a session: writer epochs for fencing, advisory locks for liveness.

A claim bumps the session's ``writer_epoch`` (``ledger_sessions``); the writer thread refuses a
batch of a session whose epoch moved past the one its store holds (fencing). Fencing keeps a
stale writer from writing but cannot tell a dead writer from a live one; for that, the claiming
store takes a **session-level advisory lock** keyed by (schema, session, epoch) on a connection
of its own, and keeps it while it holds the claim. The next ``claim`` tries that lock for the
current epoch: taken means its writer lives (``session-busy``, nothing written); free means it
released the claim or died, and the claim goes ahead.

Why a lock and not the owner's ``host:pid:start`` (what SQLite records, checked on the same
host): the server itself drops a session-level lock when the connection holding it ends, which
is exactly when the writer's process ends - killed, crashed or exited, on any host, with no PID
to reuse, no lease to renew while a writer sits idle between turns and no clock to trust. A
writer whose host vanished without closing its socket is noticed through TCP keepalives (set
below: about 25 s). What it costs: one more connection per store, and the URL must reach
PostgreSQL directly or through session pooling (a transaction-pooling proxy such as PgBouncer in
``transaction`` mode would hand the lock to whichever client uses that server connection next).
A live writer that loses this connection loses only its liveness: another claim can then take
the session, and fencing refuses the old writer's appends from then on.

Keying the lock by the epoch too lets ``take_over`` work without touching the old holder: it
bumps the epoch and locks the new key, while the fenced writer's lock on the old key no longer
means anything (it is dropped when that writer releases, claims again or ends).
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from harness_hookspecs import HarnessError

from .outage import retrying

#: The advisory lock key of (this schema, session, epoch): 64 bits of the server's text hash.
KEY = "hashtextextended(current_schema() || '/' || %s, %s)"
#: A WHERE condition: ``l`` (pg_locks) is the granted lock of ``s`` (ledger_sessions)'s epoch.
HELD_BY_ANYONE = (
    "s.writer_epoch > 0 AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid = ((hashtextextended(current_schema() || '/' || s.session_id, "
    "s.writer_epoch) >> 32) & 4294967295)::oid "
    "AND l.objid = (hashtextextended(current_schema() || '/' || s.session_id, "
    "s.writer_epoch) & 4294967295)::oid"
)
#: The claims connection's settings: a peer gone without closing its socket (its host died) is
#: noticed in ~25 s, not the kernel's 2 h; an administrator's idle-session timeout (PostgreSQL
#: 14+) must not end it: its locks are the claims.
SETTINGS = (
    "SELECT set_config('tcp_keepalives_idle', '10', false), "
    "set_config('tcp_keepalives_interval', '5', false), "
    "set_config('tcp_keepalives_count', '3', false)",
    "SELECT set_config(name, '0', false) FROM pg_settings WHERE name = 'idle_session_timeout'",
)
UNWRITABLE = "the PostgreSQL ledger could not be written"
_EPOCH_AND_LAST = "SELECT writer_epoch, last_sequence FROM ledger_sessions WHERE session_id = %s"


class Claims:
    """One store's claims connection and the advisory locks it holds (thread-safe)."""

    def __init__(self, url: str, retry_window: float = 0.0) -> None:
        self.url = url
        self.retry_window = retry_window
        self._lock = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None
        self._locked: set[tuple[str, int]] = set()  # (session, epoch) locks this connection holds

    def claim(self, session_id: str, held: int | None, take_over: bool) -> tuple[int, int]:
        """The epoch this store now holds and the session's last sequence; ``held``: the epoch
        it held before (if any). Retried on a new connection while the database is away, for
        up to the retry window (:mod:`.outage`)."""
        with self._lock:
            try:
                return retrying(
                    lambda: self._claim(self._connect(), session_id, held, take_over),
                    self.retry_window,
                    self._drop,
                )
            except psycopg.Error:
                self._drop()
                raise HarnessError("ledger-failed", UNWRITABLE) from None

    def _claim(
        self, connection: psycopg.Connection[Any], session_id: str, held: int | None, take: bool
    ) -> tuple[int, int]:
        if held is not None and (session_id, held) in self._locked:
            # Still ours if nobody bumped the epoch: one read, no row lock, no commit to wait
            # for (a worker claims before every turn). A take-over racing this read fences
            # our appends from its commit on, as it would right after a full claim.
            row = connection.execute(_EPOCH_AND_LAST, (session_id,)).fetchone()
            if row is not None and int(row[0]) == held:
                return held, int(row[1])
        with connection.transaction():
            connection.execute(
                "INSERT INTO ledger_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (session_id,),
            )
            row = connection.execute(_EPOCH_AND_LAST + " FOR UPDATE", (session_id,)).fetchone()
            assert row is not None
            epoch, last = int(row[0]), int(row[1])
            if held == epoch and self._try_lock(connection, session_id, epoch):
                return epoch, last  # still ours (re-locked if the connection was new)
            if epoch > 0 and not take and not self._free(connection, session_id, epoch):
                raise HarnessError("session-busy")
            epoch += 1
            if not self._try_lock(connection, session_id, epoch):  # a 64-bit hash collision
                raise HarnessError("session-busy")
            # (If this fails, the caller drops the connection, and the server the lock with it.)
            connection.execute(
                "UPDATE ledger_sessions SET writer_epoch = %s WHERE session_id = %s",
                (epoch, session_id),
            )
        if held is not None:  # taken over from us meanwhile: that lock means nothing now
            self._unlock(connection, session_id, held)
        return epoch, last

    def _try_lock(self, connection: psycopg.Connection[Any], session_id: str, epoch: int) -> bool:
        if (session_id, epoch) in self._locked:  # the lock counts: never take it twice
            return True
        row = connection.execute(f"SELECT pg_try_advisory_lock({KEY})", (session_id, epoch))
        if (taken := row.fetchone()) is not None and taken[0]:
            self._locked.add((session_id, epoch))
            return True
        return False

    def _free(self, connection: psycopg.Connection[Any], session_id: str, epoch: int) -> bool:
        """Whether nobody holds ``epoch``'s lock (its writer released the claim or died)."""
        if not self._try_lock(connection, session_id, epoch):
            return False
        self._unlock(connection, session_id, epoch)
        return True

    def _unlock(self, connection: psycopg.Connection[Any], session_id: str, epoch: int) -> None:
        if (session_id, epoch) in self._locked:
            self._locked.discard((session_id, epoch))
            connection.execute(f"SELECT pg_advisory_unlock({KEY})", (session_id, epoch))

    def release(self, session_id: str, epoch: int) -> None:
        """Drop ``epoch``'s lock (a lost connection already dropped it)."""
        with self._lock:
            connection = self._connection
            if connection is None or connection.closed or connection.broken:
                self._locked.discard((session_id, epoch))  # not to be re-taken
                return
            try:
                self._unlock(connection, session_id, epoch)
            except psycopg.Error:
                self._drop()

    def _connect(self) -> psycopg.Connection[Any]:
        """The claims connection; a new one re-takes the locks a lost one held (a session
        claimed by another store meanwhile has moved to a newer epoch: that lock is moot)."""
        connection = self._connection
        if connection is not None and not connection.closed and not connection.broken:
            return connection
        lost, self._locked = self._locked, set()
        if connection is not None:
            connection.close()
        connection = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
        for statement in SETTINGS:
            connection.execute(statement)
        self._connection = connection
        for session_id, epoch in lost:
            self._try_lock(connection, session_id, epoch)
        return connection

    def _drop(self) -> None:
        """Close a connection that failed (the server drops its locks; the next one re-takes
        them)."""
        if self._connection is not None:
            self._connection.close()

    def backend_pid(self) -> int | None:
        """The server process of the claims connection (tests kill it), if connected."""
        connection = self._connection
        return None if connection is None or connection.closed else connection.info.backend_pid

    def close(self) -> None:
        with self._lock:
            self._drop()
            self._connection = None
            self._locked.clear()
