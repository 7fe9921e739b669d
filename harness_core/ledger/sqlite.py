"""The embedded default ledger: SQLite, append-only, one row per event.

Writes never wait for the disk or for a lock on the event loop: ``append`` checks the sequence
(gap or duplicate -> ``ledger-failed``) and stages the write. A flush of a few staged writes
(at most :data:`HERE_MAX`) while the writer thread has nothing in hand commits them itself - a
write into the OS's cache, on a connection that never waits for a lock and never checkpoints;
anything else (a full stage, a longer flush, a locked database, a refused write) goes to a
dedicated writer thread, which commits whatever has queued up in one transaction per batch
(events as multi-row ``INSERT``s) and runs the checkpoints. A session-level write (record,
claim, release) wakes the writer, which lingers (:data:`LINGER`) for the flush that usually
follows. ``flush`` blocks until everything appended before it is committed and re-raises a
writer failure as ``ledger-failed``. Reads use their own connection (behind a lock) after a
flush, so a reader sees its own writes; the store is safe to share between threads.

Durability: WAL with ``synchronous=NORMAL``. In WAL mode a committed transaction survives a crash
of the process (the WAL is written before ``COMMIT`` returns); only an OS crash or power loss may
lose the last transactions before the next checkpoint syncs them (the trade-off SQLite
documents). That is what "durable" means for this store, and it is what buys the throughput:
``synchronous=FULL`` would fsync every batch.

The schema is in :mod:`.sqlite_schema`. A ledger from a newer harness-core, a database that
isn't a ledger, or a damaged file is refused with ``ledger-failed`` before anything writes to it
(the file stays byte for byte as it was); older ledgers are migrated in place on open.

Ownership: ``claim`` takes a session in the ``claims`` table (one ``BEGIN IMMEDIATE``, so of
processes claiming at once one wins); the writer refuses rows of a session another writer holds
(fencing) and renews this store's claims as it commits.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..clock import now as clock_now
from ..serialize import loads_record
from .base import (
    LEASE,
    STOP,
    QueuedWrites,
    RecentRecords,
    SequenceGuard,
    Waiter,
    check_prunable,
    event_from_row,
    event_row,
    holder_alive,
)
from .owner import this_process
from .sqlite_batch import (
    CHECKPOINT,
    INSERT_EVENT,
    NUDGE,
    Batch,
    Claim,
    Release,
    Session,
    Staged,
    write,
    write_each,
    write_session,
)
from .sqlite_schema import SCHEMA_VERSION as SCHEMA_VERSION
from .sqlite_schema import (
    connect,
    forget_clean,
    migrate,
    remember_clean,
    rollback,
    unchanged,
    unopened,
    use_wal,
    validate,
)

#: Session records written through this store kept for get_session (most recent first out).
RECORD_CACHE = 4096
#: Queue items the writer takes into one transaction at most.
BATCH_ITEMS = 8192
#: Writes staged in the store before they go to the writer thread in one queue item (sooner
#: when a flush asks for them): one wake-up of the writer per batch instead of per write.
STAGED_MAX = 512
#: Seconds the writer holds writes nobody waits for yet (a new session's record and claim, a
#: release) for more to commit with them: the flush that usually follows within microseconds
#: (a turn's first events) then takes them into its transaction - one commit instead of two or
#: three. Other processes see such writes at most this much later.
LINGER = 0.002
#: Writes staged at most for a flush to commit them itself (see :meth:`SqliteStore._commit_here`).
HERE_MAX = 64
#: WAL checkpoints (the fsyncs of WAL mode) run in the writer thread after a waiting flush was
#: answered, never inside a commit someone waits for: after every this many commits made by
#: flushes, or :data:`CHECKPOINT_ROWS` events committed by the writer thread (~1,000 pages,
#: SQLite's own default interval).
CHECKPOINT_EVERY = 200
CHECKPOINT_ROWS = 16_384
#: WAL pages past which a checkpoint is redone with flushes' commits held back (they go to the
#: writer thread meanwhile): SQLite reuses the WAL only after a checkpoint no commit raced, so
#: without this it could grow as long as commits keep coming.
WAL_PAGES_MAX = 2_000

SELECT_EVENTS = (
    "SELECT session_id, sequence, event_id, turn_id, type, timestamp, harness, "
    "parent_event_id, protocol_version, payload FROM events "
    "WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"
)


class SqliteStore(QueuedWrites):
    """The SQLite ledger at ``path`` (created with its directory when missing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError:
            raise unopened(path) from None
        reader: sqlite3.Connection | None = None
        writer: sqlite3.Connection | None = None
        here: sqlite3.Connection | None = None
        try:
            reader = connect(path, configure=False)
            validate(reader, quick_check=not unchanged(path))
            use_wal(reader)
            migrate(reader)
            writer = connect(path)
            writer.execute("PRAGMA wal_autocheckpoint=0")  # see CHECKPOINT_EVERY
            # Commits made by a flush itself: never wait for a lock held by another process
            # (the writer thread does that) and never checkpoint (no fsync on the caller).
            here = connect(path)
            here.execute("PRAGMA busy_timeout=0")
            here.execute("PRAGMA wal_autocheckpoint=0")
        except sqlite3.Error:
            for connection in (reader, writer, here):
                if connection is not None:
                    connection.close()
            raise unopened(path) from None
        except HarnessError:
            reader.close()  # type: ignore[union-attr]
            raise
        self._reader = reader
        self._writer_connection = writer
        self._here = here
        self._here_commits = 0
        self._read_lock = threading.Lock()
        QueuedWrites.__init__(self)
        self._guard = SequenceGuard(self._stored_last, self._stored_event, self._refreshed_last)
        self._append_lock = threading.Lock()
        self._staged = Staged()
        self._stage_lock = threading.Lock()
        self._nudged = False  # the writer was woken to take the stage and has not yet
        self._urgent = False  # the stage holds a session-level write (see _stage)
        self._in_flight = 0  # stages (and checkpoints) queued for the writer, not yet done
        self._created: set[str] = set()
        self._records = RecentRecords(RECORD_CACHE)
        self._closed = False
        self._token = uuid.uuid4().hex[:12]  # this store instance, within its process
        self._owner_pid = 0
        self._owner_text = ""
        self._epochs: dict[str, int] = {}  # sessions this store claimed -> writer epoch
        #: sessions an event of which could not be stored: no later event of theirs is written
        #: (it would leave a gap) until the session is claimed again (a resume reads what is)
        self._broken: set[str] = set()
        self._new: set[str] = set()  # sessions this store created and has not claimed yet
        self._renewed: dict[str, float] = {}  # when the writer last renewed each claim
        self._faulted = False  # a write failed since this store opened (see close)
        self._writer = threading.Thread(target=self._write_loop, name="harness-ledger", daemon=True)
        self._writer.start()

    # -- schema -----------------------------------------------------------------------------

    # -- writes -----------------------------------------------------------------------------

    def _stored_last(self, session_id: str) -> int:
        try:
            with self._read_lock:
                row = self._reader.execute(
                    "SELECT MAX(sequence) FROM events WHERE session_id = ?", (session_id,)
                ).fetchone()
        except UnicodeEncodeError:  # an id no ledger row can have
            return 0
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None
        return int(row[0] or 0)

    def _refreshed_last(self, session_id: str) -> int:
        self.flush()
        return self._stored_last(session_id)

    def _stored_event(self, session_id: str, sequence: int) -> Event | None:
        found = self.events(session_id, after=sequence - 1, limit=1)  # flushes first
        return found[0] if found and found[0].sequence == sequence else None

    def append(self, events: Sequence[Event]) -> None:
        """Check the sequence and stage the events (a flush commits them)."""
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            events = self._guard.check(events)
            if events:
                self._stage(events)

    def create_session(self, record: SessionRecord) -> None:
        # A duplicate is refused here, without waiting for the writer: ids this store created
        # are remembered, older ones are looked up (no flush: our queue cannot hold them).
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            session_id = record.session_id
            if session_id in self._created or self._stored_session(session_id):
                raise HarnessError("ledger-failed", "the session already exists")
            self._created.add(session_id)
            self._new.add(session_id)
            self._guard.seed(session_id, 0)  # a new session has no events: no MAX() query
            self._records.remember(record)
            self._stage(Session(record, False), now=True)

    def import_session(self, record: SessionRecord, batches: Iterable[Sequence[Event]]) -> None:
        """Write a new session's record and all its events in one transaction, on a
        connection of its own: all or nothing (``batches`` are streamed, one held at a time).
        ``invalid-request`` when the session id or an event id is already in the ledger (or
        repeated), ``ledger-failed`` when the disk refuses; nothing is written either way."""
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        self.flush()
        try:
            connection = connect(self.path)
        except sqlite3.Error:
            raise unopened(self.path) from None
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                write_session(connection, Session(record, False), imported=True)
            except sqlite3.IntegrityError:
                raise HarnessError(
                    "invalid-request", "the ledger already has this session id"
                ) from None
            expected = 1
            for batch in batches:
                rows = []
                for event in batch:
                    if event.session_id != record.session_id or event.sequence != expected:
                        raise HarnessError("invalid-request", "the bundle's events are not its own")
                    rows.append(event_row(event))
                    expected += 1
                try:
                    connection.executemany(INSERT_EVENT, rows)
                except sqlite3.IntegrityError:
                    raise HarnessError(
                        "invalid-request", "an event id of the bundle is already in the ledger"
                    ) from None
            connection.execute("COMMIT")
        except sqlite3.Error:
            rollback(connection)
            raise HarnessError("ledger-failed", "the import could not be stored") from None
        except BaseException:
            rollback(connection)
            raise
        finally:
            connection.close()

    def update_session(self, record: SessionRecord) -> None:
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        with self._append_lock:
            self._records.remember(record)
            self._stage(Session(record, True), now=True)

    def _stored_session(self, session_id: str) -> bool:
        sql = "SELECT 1 FROM sessions WHERE session_id = ?"
        try:
            # First on the connection flushes commit with: its page cache is the freshest (the
            # reader's is stale after every commit); it never waits, the reader does.
            with self._stage_lock:
                return self._here.execute(sql, (session_id,)).fetchone() is not None
        except sqlite3.Error:
            pass
        try:
            with self._read_lock:
                row = self._reader.execute(sql, (session_id,)).fetchone()
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None
        return row is not None

    def _stage(self, item: Any, *, now: bool = False) -> None:
        """Queue a write: events are staged here until a flush (or :data:`STAGED_MAX` of them)
        commits them. Nothing appended is durable before a flush returns, so holding events
        back until then loses no guarantee; it saves a writer wake-up, and often a transaction,
        per event. ``now``: a session record, claim or release must reach the ledger soon
        (other processes read sessions and claims), so the writer is woken for it - once until
        it takes the stage: it lingers (:data:`LINGER`) for the flush that usually follows."""
        with self._stage_lock:
            staged = self._staged
            staged.append(item)
            if len(staged) >= STAGED_MAX:
                self._queue_locked(self._take_locked())
            elif now:
                self._urgent = True
                if not self._nudged:
                    self._nudged = True
                    self._queue.put(NUDGE)

    def _take_locked(self) -> Staged:
        """What is staged, now no longer (under the stage lock)."""
        staged, self._staged = self._staged, Staged()
        self._urgent = False
        return staged

    def _queue_locked(self, item: Staged) -> None:
        """Hand a stage to the writer thread (under the stage lock): in flight until it is done
        (a flush meanwhile waits for the writer instead of committing itself)."""
        self._in_flight += 1
        self._queue.put(item)

    def _hand_over(self) -> None:
        with self._stage_lock:
            if self._staged:
                self._queue_locked(self._take_locked())

    def flush(self) -> None:
        if not self._closed and self._commit_here():
            self.raise_failure()
            return
        self._hand_over()
        QueuedWrites.flush(self)

    def flush_notify(self, callback: Callable[[], object]) -> bool:
        if self._closed:
            return False
        if self._commit_here():
            self.raise_failure()
            return False
        self._hand_over()
        return QueuedWrites.flush_notify(self, callback)

    def _commit_here(self) -> bool:
        """Commit a small stage in the calling thread when the writer thread has nothing in
        hand; True when everything appended is then committed (False: wait for the writer).

        A flush of a few writes (a short turn, a close) costs the caller less this way than the
        two thread hand-offs of a writer round trip, and the writer's commit besides. It is the
        same commit (WAL, ``synchronous=NORMAL``: a write into the OS's cache, no fsync) on a
        connection that neither waits for a lock another process holds nor checkpoints; when
        the database is locked, or a write is refused, the writer thread takes the stage.
        """
        with self._stage_lock:  # nothing is staged or handed over meanwhile: order holds
            if self._in_flight or self._here_commits >= 2 * CHECKPOINT_EVERY:
                return False  # (the latter: the writer thread is late with a checkpoint)
            staged = self._staged
            if not staged:
                return True
            if len(staged) > HERE_MAX:
                return False
            self._take_locked()
            batch = Batch(staged)
            connection = self._here
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.Error:  # locked by another process: the writer waits for it
                self._queue_locked(staged)
                return False
            try:
                write(connection, batch, self._fence)
                connection.execute("COMMIT")
            except BaseException as error:  # the writer keeps every good write
                rollback(connection)
                self._queue_locked(staged)
                if isinstance(error, (sqlite3.Error, ValueError)):
                    return False
                raise  # (an interrupt: what was staged is with the writer)
            self._committed(batch)
            self._here_commits += 1
            if self._here_commits == CHECKPOINT_EVERY:
                self._queue.put(CHECKPOINT)  # nothing in flight: flushes may commit meanwhile
            return True

    def _committed(self, batch: Batch) -> None:
        for session in batch.sessions:
            if not session.upsert:  # committed (or refused): the table now answers
                self._created.discard(session.record.session_id)

    def _write_loop(self) -> None:
        connection = self._writer_connection
        rows = 0  # committed by this thread since its last checkpoint
        while True:
            items = self._next_batch(BATCH_ITEMS)
            if any(item is NUDGE for item in items):
                self._take_stage(items)
            batch = Batch(())
            try:
                batch = Batch(items)
                if batch.writes:
                    self._commit(connection, batch)
                    rows += len(batch.rows) + 1
            except BaseException:  # never die with waiters blocked: report at the next flush
                self._fail("the SQLite writer failed")
            finally:
                self._committed(batch)
                done = sum(1 for item in items if type(item) is Staged)
                if done:
                    with self._stage_lock:
                        self._in_flight -= done
                self._release(batch.waiters)
            if batch.checkpoint or rows >= CHECKPOINT_ROWS:
                rows = 0
                self._checkpoint(connection)
            if batch.stop:
                connection.close()
                return

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        """A passive checkpoint (flushes may commit meanwhile); past :data:`WAL_PAGES_MAX`
        redone with flushes' commits held back, so that the next commit reuses the WAL (which
        takes a checkpoint that no commit raced)."""
        try:
            log = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
            if log > WAL_PAGES_MAX:
                with self._stage_lock:  # no commit here is under way, and none starts until done
                    self._in_flight += 1
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                finally:
                    with self._stage_lock:
                        self._in_flight -= 1
        except sqlite3.Error:
            pass  # busy: the next one catches up
        with self._stage_lock:
            self._here_commits = 0

    def _take_stage(self, items: list[Any]) -> None:
        """Woken for a write that must reach the ledger soon: wait up to :data:`LINGER` for a
        flush (or close) to arrive, then add the stage to ``items`` - after everything queued,
        which was all staged before it."""
        if not any(type(item) is Waiter or item is STOP for item in items):
            deadline = time.monotonic() + LINGER
            get = self._queue.get
            while len(items) < BATCH_ITEMS:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = get(timeout=remaining)
                except queue.Empty:
                    break
                items.append(item)
                if type(item) is Waiter or item is STOP:
                    break
        get_nowait = self._queue.get_nowait
        with self._stage_lock:  # a hand-over queues under this lock: nothing can slip between
            try:
                while True:
                    items.append(get_nowait())
            except queue.Empty:
                pass
            if self._urgent:  # (a flush may have committed it meanwhile: then leave the rest)
                items.append(self._take_locked())
                self._in_flight += 1
            self._nudged = False

    def _commit(self, connection: sqlite3.Connection, batch: Batch) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            write(connection, batch, self._fence)
            connection.execute("COMMIT")
            return
        except (sqlite3.Error, ValueError):  # ValueError: a str SQLite can't encode
            rollback(connection)
        # Keep every good write: redo the batch one statement at a time and report the first
        # failure.
        try:
            connection.execute("BEGIN IMMEDIATE")
            write_each(connection, batch, self._fence, self._fail, self._broken)
            connection.execute("COMMIT")
        except sqlite3.Error:
            rollback(connection)
            # none of the batch's events is stored: each session's next one would leave a gap
            self._broken.update(row[0] for row in batch.rows)
            self._fail("the SQLite ledger could not be written")

    # -- ownership --------------------------------------------------------------------------

    def claim(self, session_id: str) -> int:
        """Become the session's writer (``session-busy`` while a live owner holds it).

        One ``BEGIN IMMEDIATE`` transaction reads the claim and takes it, so of several
        processes claiming at once exactly one wins. The owner is ``HOST:PID:START#STORE``.
        """
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        held = self._epochs.get(session_id)
        if held is not None:
            return held
        self._broken.discard(session_id)  # claimed anew: it goes on from what is stored
        owner = self._owner()
        stamp = time.time()
        if session_id in self._new:
            self._new.discard(session_id)
            self._epochs[session_id] = 1
            self._renewed[session_id] = stamp
            self._stage(Claim(session_id, owner, stamp), now=True)
            return 1
        epoch = self._immediately(
            lambda connection: self._take_claim(connection, session_id, owner, stamp)
        )
        self._epochs[session_id] = epoch
        self._renewed[session_id] = stamp
        with self._append_lock:  # the previous owner may have appended since we last looked
            self._guard.reset(session_id, self._stored_last(session_id))
        return epoch

    @staticmethod
    def _take_claim(
        connection: sqlite3.Connection, session_id: str, owner: str, stamp: float
    ) -> int:
        row = connection.execute(
            "SELECT epoch, owner, renewed_at FROM claims WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is not None and holder_alive(row[1], row[2], stamp):
            raise HarnessError("session-busy")
        epoch = (row[0] if row is not None else 0) + 1
        connection.execute(
            "INSERT INTO claims VALUES (?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE "
            "SET epoch=excluded.epoch, owner=excluded.owner, renewed_at=excluded.renewed_at",
            (session_id, epoch, owner, stamp),
        )
        return int(epoch)

    def _immediately(self, work: Callable[[sqlite3.Connection], int]) -> int:
        """``work(connection)`` in one ``BEGIN IMMEDIATE`` transaction on the reader connection
        (of several processes at once, one goes first; the others wait for it)."""
        try:
            with self._read_lock:
                connection = self._reader
                connection.execute("BEGIN IMMEDIATE")
                try:
                    done = work(connection)
                    connection.execute("COMMIT")
                except BaseException:
                    rollback(connection)
                    raise
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be written") from None
        return done

    def _owner(self) -> str:
        """This store in this process: ``HOST:PID:START#STORE`` (a fork is another owner)."""
        pid = os.getpid()
        if self._owner_pid != pid:
            self._owner_pid = pid
            self._owner_text = f"{this_process()}#{self._token}"
        return self._owner_text

    def release(self, session_id: str) -> None:
        """Give the claim up once everything appended before now is committed."""
        epoch = self._epochs.pop(session_id, None)
        self._renewed.pop(session_id, None)
        if epoch is not None and not self._closed:
            self._stage(Release(session_id, epoch), now=True)

    def claimed(self, session_id: str) -> bool:
        if session_id in self._epochs:
            return True
        rows = self._read(
            "SELECT owner, renewed_at FROM claims WHERE session_id = ?", (session_id,)
        )
        return bool(rows) and holder_alive(rows[0][0], rows[0][1], time.time())

    def prune_session(self, session_id: str, *, archived_through: int) -> int:
        """Remove an archived, closed session (see :class:`~harness_core.ledger.PruningStore`):
        one ``BEGIN IMMEDIATE`` transaction checks it, writes its ``pruned`` tombstone (which
        lets the delete trigger pass for it alone) and removes its rows."""
        if self._closed:
            raise HarnessError("ledger-failed", "the ledger is closed")
        if session_id in self._epochs:
            raise HarnessError("session-busy")
        self.flush()
        removed = self._immediately(
            lambda connection: self._prune_locked(connection, session_id, archived_through)
        )
        self._records.pop(session_id, None)
        with self._append_lock:
            self._guard.forget(session_id)
        return removed

    @staticmethod
    def _prune_locked(connection: sqlite3.Connection, session_id: str, through: int) -> int:
        row = connection.execute(
            "SELECT status FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise HarnessError("session-not-found")
        last = connection.execute(
            "SELECT coalesce(max(sequence), 0) FROM events WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        check_prunable(session_id, row[0], last, through)
        claim = connection.execute(
            "SELECT owner, renewed_at FROM claims WHERE session_id = ?", (session_id,)
        ).fetchone()
        if claim is not None and holder_alive(claim[0], claim[1], time.time()):
            raise HarnessError("session-busy")
        connection.execute("INSERT INTO pruned VALUES (?, ?, ?)", (session_id, clock_now(), last))
        removed = connection.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM event_ids WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM event_prefixes WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM claims WHERE session_id = ?", (session_id,))
        return int(removed.rowcount)

    def _fence(self, connection: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[Any]:
        """``rows`` less those of sessions another writer holds (inside the transaction), and
        less those of a session an earlier event of which could not be stored (a full or
        read-only disk): written after the gap, they would break its sequence."""
        broken = self._broken
        if broken:
            kept = [row for row in rows if row[0] not in broken]
            if len(kept) != len(rows):
                self._fail("the SQLite ledger could not be written")
                rows = kept
        refused: set[str] = set()
        now = time.time()
        me = self._owner()
        for session_id in {row[0] for row in rows}:
            claim = connection.execute(
                "SELECT owner, renewed_at FROM claims WHERE session_id = ?", (session_id,)
            ).fetchone()
            if claim is None:
                continue
            if claim[0] == me:  # ours (rows queued before a release still are)
                if now - self._renewed.get(session_id, now) > LEASE / 3:
                    connection.execute(
                        "UPDATE claims SET renewed_at = ? WHERE session_id = ?", (now, session_id)
                    )
                    self._renewed[session_id] = now
            elif session_id in self._epochs or holder_alive(claim[0], claim[1], now):
                refused.add(session_id)  # taken over from us, or another live writer holds it
        if not refused:
            return rows
        self._fail("the session is claimed by another writer")
        return [row for row in rows if row[0] not in refused]

    # -- reads ------------------------------------------------------------------------------

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        self.flush()
        try:
            with self._read_lock:
                return self._reader.execute(sql, args).fetchall()
        except UnicodeEncodeError:  # an id no ledger row can have (surrogate-escaped argv)
            return []
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None

    def get_session(self, session_id: str) -> SessionRecord | None:
        # What this store wrote last is what the writer commits (records are immutable).
        known = self._records.get(session_id)
        if known is not None:
            return known
        rows = self._read("SELECT record FROM sessions WHERE session_id = ?", (session_id,))
        return loads_record(rows[0][0]) if rows else None

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        rows = self._read(
            "SELECT record FROM sessions ORDER BY created_at DESC, session_id LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [loads_record(row[0]) for row in rows]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """Events with ``sequence > after`` in order, at most ``limit`` of them."""
        rows = self._read(SELECT_EVENTS, (session_id, after, -1 if limit is None else limit))
        return [event_from_row(row) for row in rows]

    def last_sequence(self, session_id: str) -> int:
        known = self._guard.last(session_id)
        return known if known is not None else self._stored_last(session_id)

    def close(self) -> None:
        """Flush, stop the writer thread and close both connections (idempotent)."""
        if self._closed:
            return
        for session_id in list(self._epochs):
            self.release(session_id)
        QueuedWrites.close(self)
        if self._faulted or self._writer.is_alive():
            forget_clean(self.path)
        else:
            remember_clean(self.path)  # the next open need not read every page again

    def _fail(self, message: str) -> None:
        self._faulted = True  # a write went wrong: the next open checks the file whole
        QueuedWrites._fail(self, message)

    def _close_readers(self) -> None:
        with self._read_lock:
            self._reader.close()
        with self._stage_lock:
            self._here.close()
