"""The PostgreSQL ledger: one durable, append-only record that many workers share.

Writes never block the event loop: ``append`` checks the sequence against what this store knows
(a different event at a used sequence, or a gap -> ``ledger-failed``; an exact replay is
dropped) and enqueues; a writer thread commits whatever has queued up in one transaction per
batch. In that transaction the sessions' rows are locked (in session-id order, so two writers
cannot deadlock) and the database decides: the batch's events must continue each session's
last sequence, a replayed event must equal the stored one, and a session this store has
``claim``\\ ed must still carry its writer epoch (a writer fenced by a newer claim is refused).
A refused session's events are reported at the next ``flush`` as ``ledger-failed`` with the
reason; the other sessions' events are committed. The commit also NOTIFYs each session's id,
which wakes the live tails (:mod:`.listen`).

Riding out the database (:mod:`.outage`): a lost connection is reopened and the batch retried,
with backoff and jitter, for up to the retry window (30 s by default). Meanwhile ``flush``
waits - nothing appended is delivered before it is durable - and later appends join the batch.
Appends are idempotent (an exact replay of a stored event is a no-op), so a batch whose commit
landed before its connection died is harmless the second time. When the window runs out,
``flush`` raises ``ledger-failed`` (at once, for as long as the database stays away) while the
writer keeps the batch and goes on trying: what was appended, the failed turn's terminal
included, is written once the database is back - unless the store is closed first (then the
next process to claim the session closes the turn: ``interrupted``). Reads and claims retry
over the same window; a read during a reported outage tries once.

Durability: a commit returns after PostgreSQL has flushed its WAL (``synchronous_commit`` on, the
server default); ``flush`` returns once everything appended before it is committed.

Ownership (:mod:`.claims`): ``claim`` refuses a session whose writer is alive with
``session-busy`` (as SQLite's does), else bumps the session's writer epoch; liveness is a
session-level advisory lock the writer's own connection holds, which the server drops when that
process dies. ``take_over`` fences even a live writer (for an orchestrator such as Temporal that
decides who runs a session).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from harness_hookspecs import Event, HarnessError, SessionRecord

from harness_core.clock import now as clock_now
from harness_core.ledger.base import (
    CONFLICT,
    EVENT_COLUMNS,
    GAP,
    STOP,
    QueuedWrites,
    RecentRecords,
    SequenceGuard,
    Waiter,
    check_prunable,
    event_from_row,
    event_row,
    record_row,
)
from harness_core.serialize import loads_record

from .claims import HELD_BY_ANYONE, Claims
from .listen import Listener, tail
from .outage import MAX_DELAY, RETRYABLE, RetryWindow, retrying, window_setting
from .readers import CONNECT_TIMEOUT, Readers
from .schema import CHANNEL, migrate

#: Queue items the writer takes into one transaction at most.
BATCH_ITEMS = 4096
#: Session records written through this store kept for get_session.
RECORD_CACHE = 4096
FENCED = "the session was claimed by another writer (stale writer epoch)"
UNREACHABLE = "the PostgreSQL ledger could not be reached"
UNWRITABLE = "the PostgreSQL ledger could not be written"
#: The epoch an abandoned session is held at: no claim gives it, so every write is fenced.
ABANDONED = -1
UNREADABLE = "the PostgreSQL ledger could not be read"

_SELECT_EVENTS = (
    f"SELECT {EVENT_COLUMNS} FROM ledger_events "
    "WHERE session_id = %s AND sequence > %s ORDER BY sequence LIMIT %s"
)
_UPSERT_RECORD = (
    "INSERT INTO ledger_sessions (session_id, provider, status, created_at, updated_at, record) "
    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
    "provider = excluded.provider, status = excluded.status, created_at = excluded.created_at, "
    "updated_at = excluded.updated_at, record = excluded.record"
)
_CREATE_RECORD = _UPSERT_RECORD + " WHERE ledger_sessions.record IS NULL RETURNING 1"
_HELD = (
    "SELECT EXISTS (SELECT 1 FROM ledger_sessions s, pg_locks l "
    f"WHERE s.session_id = %s AND {HELD_BY_ANYONE})"
)


def _prune_locked(connection: psycopg.Connection[Any], session_id: str, through: int) -> int:
    row = connection.execute(
        "SELECT status, last_sequence FROM ledger_sessions WHERE session_id = %s "
        "AND record IS NOT NULL FOR UPDATE",
        (session_id,),
    ).fetchone()
    if row is None:
        raise HarnessError("session-not-found")
    check_prunable(session_id, row[0], int(row[1]), through)
    held = connection.execute(_HELD, (session_id,)).fetchone()
    if held is not None and held[0]:
        raise HarnessError("session-busy")
    connection.execute(
        "INSERT INTO ledger_pruned VALUES (%s, %s, %s)", (session_id, clock_now(), row[1])
    )
    removed = connection.execute("DELETE FROM ledger_events WHERE session_id = %s", (session_id,))
    connection.execute("DELETE FROM ledger_sessions WHERE session_id = %s", (session_id,))
    return int(removed.rowcount)


class _Create:
    """A new session's record, written by the writer thread (refused if one exists by then)."""

    __slots__ = ("record",)

    def __init__(self, record: SessionRecord) -> None:
        self.record = record


class _Batch:
    """What the writer takes into one transaction, in queue order; grows while it is retried."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.creates: list[SessionRecord] = []
        self.records: list[SessionRecord] = []
        self.waiters: list[Waiter] = []
        self.stop = False

    def add(self, items: list[Any]) -> None:
        for item in items:
            if isinstance(item, Waiter):
                self.waiters.append(item)
            elif isinstance(item, _Create):
                self.creates.append(item.record)
            elif isinstance(item, SessionRecord):
                self.records.append(item)
            elif item is STOP:
                self.stop = True
            else:
                self.events.extend(item)

    @property
    def writes(self) -> bool:
        return bool(self.events or self.creates or self.records)


class PostgresStore(QueuedWrites):
    """The ledger in the PostgreSQL database at ``url`` (``postgresql://user@host:port/db``).

    ``retry_window``: seconds a write, read or claim keeps retrying while the database is away
    (default ``$HARNESS_LEDGER_RETRY_WINDOW`` or 30; see :mod:`.outage`). Opening the store
    does not retry: an unreachable database at start is one ``ledger-failed`` line at once.
    """

    def __init__(self, url: str, *, pool_size: int = 4, retry_window: float | None = None) -> None:
        self.url = url
        self.retry_window = window_setting(retry_window)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
                migrate(connection)
        except psycopg.Error:
            raise HarnessError("ledger-failed", UNREACHABLE) from None
        self._readers = Readers(url, pool_size)
        self._writer_connection: psycopg.Connection[Any] | None = None
        QueuedWrites.__init__(self)
        #: set while the database stays away past the window (the writer still retries)
        self._down: str | None = None
        self._append_lock = threading.Lock()
        self._guard = SequenceGuard(self._stored_last, self._stored_event, self._refreshed_last)
        self._creating: set[str] = set()  # records queued, not yet committed
        self._epochs: dict[str, int] = {}  # sessions this store claimed: the epoch it holds
        self.claims = Claims(url, self.retry_window)  # the claims connection (tests kill it)
        self._records = RecentRecords(RECORD_CACHE)
        self._closed = False
        self.listeners: list[Listener] = []  # the live tails' connections (tests kill them)
        self._writer = threading.Thread(
            target=self._write_loop, name="harness-ledger-pg", daemon=True
        )
        self._writer.start()

    # -- reads ------------------------------------------------------------------------------

    def _query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One read, retried over the window (once only while an outage is reported)."""
        window = 0.0 if self._down is not None else self.retry_window
        try:
            return retrying(lambda: self._readers.query(sql, args), window, self._readers.discard)
        except psycopg.Error:
            raise HarnessError("ledger-failed", UNREADABLE) from None

    @property
    def reader_backend_pids(self) -> list[int]:
        """The server processes of the reads' idle connections (tests terminate them)."""
        return self._readers.backend_pids()

    def _stored_last(self, session_id: str) -> int:
        rows = self._query(
            "SELECT last_sequence FROM ledger_sessions WHERE session_id = %s", (session_id,)
        )
        return int(rows[0][0]) if rows else 0

    def _refreshed_last(self, session_id: str) -> int:
        self.flush()
        return self._stored_last(session_id)

    def _stored_event(self, session_id: str, sequence: int) -> Event | None:
        found = self.events(session_id, after=sequence - 1, limit=1)
        return found[0] if found and found[0].sequence == sequence else None

    @property
    def writer_backend_pid(self) -> int | None:
        """The server process behind the writer thread's connection (``None`` before it has
        one): what an operator - or a test of reconnection - terminates to cut the writer off."""
        connection = self._writer_connection
        return connection.info.backend_pid if connection is not None else None

    def read_events(self, session_id: str, after: int, limit: int | None) -> list[Event]:
        """Committed events after ``after`` without waiting for this store's own queue."""
        rows = self._query(_SELECT_EVENTS, (session_id, max(0, after), limit))
        return [event_from_row(row) for row in rows]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Events with ``sequence > after`` in order, at most ``limit`` of them."""
        self.flush()
        return self.read_events(session_id, after, None if limit is None else max(0, limit))

    def last_sequence(self, session_id: str) -> int:
        self.flush()
        last = self._stored_last(session_id)
        with self._append_lock:
            self._guard.reset(session_id, last)
        return last

    def get_session(self, session_id: str) -> SessionRecord | None:
        known = self._records.get(session_id)
        if known is not None:
            return known
        self.flush()
        rows = self._query(
            "SELECT record FROM ledger_sessions WHERE session_id = %s AND record IS NOT NULL",
            (session_id,),
        )
        return loads_record(rows[0][0]) if rows else None

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        self.flush()
        rows = self._query(
            "SELECT record FROM ledger_sessions WHERE record IS NOT NULL "
            "ORDER BY created_at DESC, session_id LIMIT %s",
            (limit,),
        )
        return [loads_record(row[0]) for row in rows]

    def writer_epoch(self, session_id: str) -> int:
        """The session's current writer epoch (0: never claimed)."""
        rows = self._query(
            "SELECT writer_epoch FROM ledger_sessions WHERE session_id = %s", (session_id,)
        )
        return int(rows[0][0]) if rows else 0

    def tail(self, session_id: str, *, after: int = 0) -> AsyncIterator[Event]:
        """New events of ``session_id`` from any writer: LISTEN/NOTIFY, polling as backstop."""
        return tail(self, session_id, after=after)

    # -- writes -----------------------------------------------------------------------------

    def _open(self) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")

    def create_session(self, record: SessionRecord) -> None:
        """Refuse a session that has a record; else queue the record for the next commit.

        One read here (no commit: that is the writer's, batched with the events); a second
        process creating the same id in the same instant is refused at its next flush.
        """
        self._open()
        session_id = record.session_id
        with self._append_lock:
            if session_id in self._creating:
                raise HarnessError("ledger-failed", "the session already exists")
            rows = self._query(
                "SELECT record IS NOT NULL, last_sequence FROM ledger_sessions "
                "WHERE session_id = %s",
                (session_id,),
            )
            if rows and rows[0][0]:
                raise HarnessError("ledger-failed", "the session already exists")
            self._guard.seed(session_id, int(rows[0][1]) if rows else 0)
            self._creating.add(session_id)
            self._records.remember(record)
            self._queue.put(_Create(record))

    def update_session(self, record: SessionRecord) -> None:
        self._open()
        with self._append_lock:
            if self._epochs.get(record.session_id) == ABANDONED:
                raise HarnessError("ledger-failed", FENCED)
            self._records.remember(record)
            self._queue.put(record)

    def append(self, events: Sequence[Event]) -> None:
        """Check the sequence and enqueue; the writer thread commits (see the module doc)."""
        self._open()
        with self._append_lock:
            if events and self._epochs.get(events[0].session_id) == ABANDONED:
                raise HarnessError("ledger-failed", FENCED)
            events = self._guard.check(events)
            if events:
                self._queue.put(events)

    def claim(self, session_id: str) -> int:
        """Become the session's writer: ``session-busy`` while another live writer holds it,
        else bump its writer epoch and return it (a session this store holds: the same epoch).

        Appends of this store to the session then carry the new epoch; any other store that
        claimed it before is fenced (its appends are refused). What this store appended before
        the claim is committed first.
        """
        return self._claim(session_id, take_over=False)[0]

    def take_over(self, session_id: str) -> int:
        """Like :meth:`claim`, but a live writer does not refuse it: that writer is fenced.

        For an orchestrator that decides who runs a session (Temporal runs a session's next
        activity on another worker when it presumes the last one lost, dead or not)."""
        return self._claim(session_id, take_over=True)[0]

    def take_over_at(self, session_id: str) -> tuple[int, int]:
        """:meth:`take_over`, and the session's last committed sequence as the claim read it
        (what :meth:`last_sequence` would say next): one round trip for a caller that needs
        both, as a Temporal worker does before each turn."""
        return self._claim(session_id, take_over=True)

    def _claim(self, session_id: str, *, take_over: bool) -> tuple[int, int]:
        self._open()
        self.flush()
        epoch, last = self.claims.claim(session_id, self._epochs.get(session_id), take_over)
        with self._append_lock:
            self._epochs[session_id] = epoch
            self._guard.reset(session_id, last)
        return epoch, last

    def held_last(self, session_id: str) -> int | None:
        """The last sequence of ``session_id`` as this store appended it, while the store
        holds the session's claim (``None`` when it does not, or does not know): after a flush,
        what :meth:`last_sequence` reads, without the read. A take-over since then fences this
        store, and its next claim reads the new last sequence."""
        with self._append_lock:
            if self._epochs.get(session_id, ABANDONED) == ABANDONED:
                return None
            return self._guard.last(session_id)

    def release(self, session_id: str) -> None:
        """Stop writing the session (the epoch stays: the next claim, anyone's, bumps it)."""
        self.flush()
        with self._append_lock:
            epoch = self._epochs.pop(session_id, None)
        if epoch is not None:
            self.claims.release(session_id, epoch)

    def abandon(self, session_id: str) -> None:
        """Stop writing the session as a writer that lost it would: what was appended before
        is committed, every later append (or record update) of it is refused (``ledger-failed``,
        fenced) until this store claims it again, and the claim's lock is dropped.

        For a worker that hands a running turn over (it stops): the turn's own cancel then
        writes nothing - no terminal - and the next claimer retries the turn under its id."""
        self._open()
        self.flush()
        with self._append_lock:
            epoch = self._epochs.get(session_id)
            self._epochs[session_id] = ABANDONED
        if epoch is not None and epoch != ABANDONED:
            self.claims.release(session_id, epoch)

    def claimed(self, session_id: str) -> bool:
        """Whether a live writer holds the session: this store, or a store whose connection
        holds the advisory lock of the session's current epoch."""
        if self._epochs.get(session_id, ABANDONED) != ABANDONED:
            return True
        rows = self._query(_HELD, (session_id,))
        return bool(rows and rows[0][0])

    def prune_session(self, session_id: str, *, archived_through: int) -> int:
        """Remove an archived, closed session (``harness_core.ledger.PruningStore``): one
        transaction locks its row, checks it, writes its ``ledger_pruned`` tombstone (which
        lets the delete trigger pass for it alone) and removes its rows. Needs the role of
        ``schema.PRUNE_PRIVILEGES``; not retried (an operator's command, run again)."""
        self._open()
        if self._epochs.get(session_id, ABANDONED) != ABANDONED:
            raise HarnessError("session-busy")
        self.flush()
        try:
            with (
                psycopg.connect(self.url, autocommit=True, connect_timeout=10) as connection,
                connection.transaction(),
            ):
                removed = _prune_locked(connection, session_id, archived_through)
        except psycopg.errors.InsufficientPrivilege:
            raise HarnessError(
                "ledger-failed", "the PostgreSQL role may not prune the ledger"
            ) from None
        except psycopg.Error:
            raise HarnessError("ledger-failed", UNWRITABLE) from None
        self._records.pop(session_id, None)
        with self._append_lock:
            self._guard.forget(session_id)
        return removed

    def _close_readers(self) -> None:
        self._readers.close()
        self.claims.close()  # the server drops its advisory locks with it

    def raise_failure(self) -> None:
        """Raise the writer's failure since the last flush; ``ledger-failed`` at every flush
        while the database stays away past the retry window."""
        down = self._down
        if down is not None:
            self._failure = None
            raise HarnessError("ledger-failed", down)
        super().raise_failure()

    @property
    def outage(self) -> bool:
        """Whether the database has been away longer than the retry window (and the writer
        still holds what it could not write)."""
        return self._down is not None

    # -- the writer thread ------------------------------------------------------------------

    def _write_loop(self) -> None:
        while True:
            batch = _Batch()
            batch.add(self._next_batch(BATCH_ITEMS))
            try:
                self._write_riding_out(batch)
            except BaseException:  # never die with waiters blocked: report at the next flush
                self._fail(UNWRITABLE)
                for event in batch.events:  # not stored: the next append re-reads the real last
                    self._guard.forget(event.session_id)
            finally:
                self._creating.difference_update(record.session_id for record in batch.creates)
                self._release(batch.waiters)
            if batch.stop:
                self._drop_writer_connection()
                return

    def _write_riding_out(self, batch: _Batch) -> None:
        """Commit ``batch``, retrying while the database is away (see the module doc).

        Within the window the waiters wait; past it they are released at once (their flush
        raises) and the batch - growing with what is appended meanwhile - is retried every
        :data:`~.outage.MAX_DELAY` seconds. After ``close`` one more attempt is made: what it
        cannot write was never delivered, and the session's next claimer ends its turn."""
        pace = RetryWindow(self.retry_window)
        retried = False
        while True:
            try:
                if batch.writes:
                    self._commit(batch.creates, batch.events, batch.records, retried=retried)
                self._down = None
                return
            except RETRYABLE:
                retried = True
                self._drop_writer_connection()
                if batch.stop:
                    raise
                delay = pace.next_delay()
                if delay is None:  # the window is spent: report it, keep the batch
                    self._down = UNWRITABLE
                    delay = MAX_DELAY
                if self._down is not None:
                    self._release(batch.waiters)
                    batch.waiters = []
                self._gather(batch, delay)

    def _gather(self, batch: _Batch, seconds: float) -> None:
        """Wait ``seconds`` between attempts, adding what is queued meanwhile to ``batch``
        (while an outage is reported, a flush waiter is released as soon as it comes)."""
        deadline = time.monotonic() + seconds
        while not batch.stop:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                return
            batch.add([item])
            if self._down is not None and batch.waiters:
                self._release(batch.waiters)
                batch.waiters = []

    def _drop_writer_connection(self) -> None:
        if self._writer_connection is not None:
            self._writer_connection.close()
        self._writer_connection = None

    def _connection(self) -> psycopg.Connection[Any]:
        connection = self._writer_connection
        if connection is None or connection.closed or connection.broken:
            connection = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            self._writer_connection = connection
        return connection

    def _commit(
        self,
        creates: list[SessionRecord],
        events: list[Event],
        records: list[SessionRecord],
        *,
        retried: bool = False,
    ) -> None:
        """One attempt at the batch (a lost connection raises: the caller retries);
        ``retried``: an earlier attempt may have committed before its connection died."""
        by_session: dict[str, list[Event]] = {}
        for event in events:
            by_session.setdefault(event.session_id, []).append(event)
        try:
            connection = self._connection()
            with connection.transaction():
                refused = self._create(connection, creates, retried)
                refused.update(self._write(connection, by_session, records))
        except psycopg.IntegrityError:
            # An event id used by another session: commit session by session instead.
            refused = self._write_one_by_one(creates, by_session, records, retried)
        for session_id, reason in refused.items():
            self._fail(reason)
            # What this store believed stored was not. No _append_lock here: an append holding
            # it may be waiting for this thread (a flush); the database stays the authority.
            self._guard.reset(session_id, self._stored_last(session_id))

    def _write_one_by_one(
        self,
        creates: list[SessionRecord],
        by_session: dict[str, list[Event]],
        records: list[SessionRecord],
        retried: bool,
    ) -> dict[str, str]:
        connection = self._connection()
        with connection.transaction():
            refused = self._create(connection, creates, retried)
            for record in records:
                connection.execute(_UPSERT_RECORD, record_row(record))
        for session_id, session_events in by_session.items():
            try:
                with connection.transaction():
                    refused.update(self._write(connection, {session_id: session_events}, []))
            except psycopg.IntegrityError:
                refused[session_id] = "an event id is already recorded in another session"
        return refused

    def _create(
        self, connection: psycopg.Connection[Any], creates: list[SessionRecord], retried: bool
    ) -> dict[str, str]:
        """Insert new sessions' records; the ids that already had one are refused (on a retry,
        not when the stored record is this very one: the first attempt's commit landed)."""
        refused: dict[str, str] = {}
        for record in creates:
            row = record_row(record)
            if connection.execute(_CREATE_RECORD, row).fetchone() is not None:
                continue
            stored = (
                None
                if not retried
                else connection.execute(
                    "SELECT record FROM ledger_sessions WHERE session_id = %s", (record.session_id,)
                ).fetchone()
            )
            if stored is not None and stored[0] == row[-1]:
                continue  # this very record: a retried batch whose first commit landed
            refused[record.session_id] = "the session already exists"
            self._records.pop(record.session_id, None)  # another writer's record stands
        return refused

    def _write(
        self,
        connection: psycopg.Connection[Any],
        by_session: dict[str, list[Event]],
        records: list[SessionRecord],
    ) -> dict[str, str]:
        """Check and write one batch inside the caller's transaction; the refused sessions."""
        refused: dict[str, str] = {}
        session_ids = sorted(by_session)
        rows: list[tuple[Any, ...]] = []
        advanced: dict[str, int] = {}
        if session_ids:
            connection.execute(
                "INSERT INTO ledger_sessions (session_id) "
                "SELECT s FROM unnest(%s::text[]) s ORDER BY s ON CONFLICT DO NOTHING",
                (session_ids,),
            )
            state = connection.execute(
                "SELECT session_id, last_sequence, writer_epoch FROM ledger_sessions "
                "WHERE session_id = ANY(%s) ORDER BY session_id FOR UPDATE",
                (session_ids,),
            ).fetchall()
            for session_id, last, epoch in state:
                held = self._epochs.get(session_id)
                if held is not None and held != epoch:
                    refused[session_id] = FENCED
                    continue
                fresh, reason = self._continuation(
                    connection, session_id, by_session[session_id], last
                )
                if reason is not None:
                    refused[session_id] = reason
                    continue
                if fresh:
                    rows += [(*event_row(e), epoch) for e in fresh]
                    advanced[session_id] = fresh[-1].sequence
        if rows:
            with connection.cursor().copy(
                f"COPY ledger_events ({EVENT_COLUMNS}, writer_epoch) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            connection.execute(
                "UPDATE ledger_sessions s SET last_sequence = v.last "
                "FROM unnest(%s::text[], %s::bigint[]) AS v(sid, last) WHERE s.session_id = v.sid",
                (list(advanced), list(advanced.values())),
            )
            connection.execute(
                "SELECT pg_notify(%s, s) FROM unnest(%s::text[]) s", (CHANNEL, list(advanced))
            )
        if records:
            connection.cursor().executemany(
                _UPSERT_RECORD, [record_row(record) for record in records]
            )
        return refused

    @staticmethod
    def _continuation(
        connection: psycopg.Connection[Any], session_id: str, events: list[Event], last: int
    ) -> tuple[list[Event], str | None]:
        """The events that continue ``last``, less exact replays; or the reason to refuse."""
        replayed = [e.sequence for e in events if e.sequence <= last]
        stored: dict[int, Event] = {}
        if replayed:
            rows = connection.execute(
                f"SELECT {EVENT_COLUMNS} FROM ledger_events "
                "WHERE session_id = %s AND sequence = ANY(%s)",
                (session_id, replayed),
            ).fetchall()
            stored = {row[1]: event_from_row(row) for row in rows}
        fresh: list[Event] = []
        for event in events:
            if event.sequence <= last:
                if stored.get(event.sequence) != event:
                    return [], CONFLICT
            elif event.sequence == last + 1:
                fresh.append(event)
                last += 1
            else:
                return [], GAP
        return fresh, None
