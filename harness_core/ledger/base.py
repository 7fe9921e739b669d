"""What the ledger stores share, public for store plugins (the PostgreSQL store imports it): the
gap-free sequence check done at append time, event rows, the in-memory session table, and the
queue a writer thread commits from (SQLite, PostgreSQL). (This module was ``_base``.)"""

from __future__ import annotations

import json
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..serialize import dumps_record, payload_from_dict, payload_json
from .owner import owner_alive

#: The envelope columns of one event row, in the order :func:`event_row` gives them.
EVENT_COLUMNS = (
    "session_id, sequence, event_id, turn_id, type, timestamp, harness, parent_event_id, "
    "protocol_version, payload"
)

#: A different event at a sequence already used, or a sequence past the next one.
CONFLICT = "a different event is already recorded at this sequence"
GAP = "sequence gap refused"


def event_row(e: Event) -> tuple[Any, ...]:
    """One event as a row of :data:`EVENT_COLUMNS` (the payload as compact JSON)."""
    return (
        e.session_id,
        e.sequence,
        e.event_id,
        e.turn_id,
        e.type,
        e.timestamp,
        e.harness,
        e.parent_event_id,
        e.protocol_version,
        payload_json(e.payload),
    )


def record_row(record: SessionRecord) -> tuple[Any, ...]:
    """A session record as (session_id, provider, status, created_at, updated_at, JSON)."""
    return (
        record.session_id,
        record.ref.harness,
        record.status,
        record.created_at,
        record.updated_at,
        dumps_record(record),
    )


def event_from_row(row: Sequence[Any]) -> Event:
    """The event stored as a row of :data:`EVENT_COLUMNS`."""
    try:
        payload = json.loads(row[9])
    except (TypeError, ValueError):
        raise HarnessError("ledger-failed", "a stored event is not JSON") from None
    return Event(
        session_id=row[0],
        sequence=row[1],
        event_id=row[2],
        turn_id=row[3],
        type=row[4],
        timestamp=row[5],
        harness=row[6],
        parent_event_id=row[7],
        protocol_version=row[8],
        payload=payload_from_dict(row[4], payload),
    )


class RecentRecords(OrderedDict[str, SessionRecord]):
    """The session records a store wrote last (records are immutable: what it wrote is what
    its writer commits), so ``get_session`` needs no read for them; the oldest drop out."""

    def __init__(self, size: int = 4096) -> None:
        super().__init__()
        self.size = size

    def remember(self, record: SessionRecord) -> None:
        self[record.session_id] = record
        self.move_to_end(record.session_id)
        if len(self) > self.size:
            self.popitem(last=False)


class Waiter:
    """A flush waiter on the writer queue: ``set()`` runs once what came before is committed."""

    __slots__ = ("set",)

    def __init__(self, callback: Callable[[], object]) -> None:
        self.set = callback


#: Queued by ``close``: the writer thread commits what came before and stops.
STOP = object()


class QueuedWrites:
    """Appends queued for a writer thread that commits them in batches; flush waits for it.

    The writer reports a failure with :meth:`_fail`; the next ``flush`` (or
    :meth:`raise_failure` after ``flush_notify``) raises it as ``ledger-failed``.
    """

    _closed: bool
    _writer: threading.Thread

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._failure: str | None = None

    def flush(self) -> None:
        """Block until everything appended before now is committed; raise a writer failure."""
        if not self._closed:
            done = threading.Event()
            self._queue.put(Waiter(done.set))
            done.wait()
        self.raise_failure()

    def flush_notify(self, callback: Callable[[], object]) -> bool:
        """Like :meth:`flush` without blocking: ``callback()`` runs on the writer thread once
        everything appended before now is committed; then call :meth:`raise_failure`.

        Returns ``False`` (and never calls back) when there is nothing to wait for.
        """
        if self._closed:
            return False
        self._queue.put(Waiter(callback))
        return True

    def raise_failure(self) -> None:
        """Raise the writer's first failure since the last flush, if any."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise HarnessError("ledger-failed", failure)

    def _fail(self, message: str) -> None:
        if self._failure is None:  # report the first failure since the last flush
            self._failure = message

    def close(self) -> None:
        """Flush, stop the writer thread, close the read side (idempotent)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._queue.put(STOP)
            self._writer.join(timeout=30)
            self._close_readers()

    def _close_readers(self) -> None:
        """Close what reads use (the writer thread closes its own connection at STOP)."""

    def _next_batch(self, limit: int) -> list[Any]:
        """Wait for one queued item, then take whatever else is queued (up to ``limit``)."""
        items = [self._queue.get()]
        get_nowait = self._queue.get_nowait
        try:
            while len(items) < limit:
                items.append(get_nowait())
        except queue.Empty:
            pass
        return items

    @staticmethod
    def _release(waiters: list[Waiter]) -> None:
        for waiter in waiters:
            try:
                waiter.set()
            except Exception:  # a notify callback on a closed loop
                pass


class SessionsInMemory:
    """``get_session`` and ``list_sessions`` of a store that holds every session record in
    memory, by id (the memory and JSONL stores)."""

    _sessions: dict[str, SessionRecord]

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        """Newest first (by ``created_at``), at most ``limit``."""
        records = sorted(self._sessions.values(), key=lambda r: r.created_at, reverse=True)
        return records[:limit] if limit is not None else records


def nth_event(buckets: dict[str, list[Event]], session_id: str, sequence: int) -> Event | None:
    """The event at ``sequence`` of a session kept in memory as a gap-free list from 1."""
    bucket = buckets.get(session_id, ())
    return bucket[sequence - 1] if 0 < sequence <= len(bucket) else None


class SequenceGuard:
    """Refuses an append whose sequence is not exactly the session's last + 1.

    An exact replay (an event equal to the one stored at its sequence: a retried write) is
    accepted and dropped, so appending the same events twice records them once; a different
    event at a used sequence is refused, and so is a gap.

    ``refresh(session_id)`` (a store other processes write too): the committed last sequence,
    after committing this store's own queue; asked before refusing, since another writer may
    have moved the session on.
    """

    def __init__(
        self,
        last_stored: Callable[[str], int],
        stored_event: Callable[[str, int], Event | None],
        refresh: Callable[[str], int] | None = None,
    ) -> None:
        self._last: dict[str, int] = {}
        self._last_stored = last_stored
        self._stored_event = stored_event
        self._refresh = refresh

    def check(self, events: Sequence[Event]) -> Sequence[Event]:
        """The events to store: ``events`` less exact replays; raises on a conflict or a gap."""
        last = self._last
        if len(events) == 1:  # the controller appends one event at a time
            event = events[0]
            sid = event.session_id
            previous = last.get(sid)
            if previous is None:
                previous = self._last_stored(sid)
            if event.sequence != previous + 1 and not self._moved_on(event):
                self._refuse(event, previous)
                return ()
            last[sid] = event.sequence
            return events
        staged: dict[str, int] = {}
        fresh: list[Event] = []
        for event in events:
            sid = event.session_id
            previous = staged.get(sid)
            if previous is None:
                previous = last.get(sid)
                if previous is None:
                    previous = self._last_stored(sid)
            if event.sequence != previous + 1 and not (sid not in staged and self._moved_on(event)):
                self._refuse(event, previous)
                continue  # an exact replay: already stored
            staged[sid] = event.sequence
            fresh.append(event)
        last.update(staged)
        return fresh

    def _moved_on(self, event: Event) -> bool:
        """Whether ``event`` continues the session as another writer left it."""
        if self._refresh is None:
            return False
        last = self._refresh(event.session_id)
        self._last[event.session_id] = last
        return event.sequence == last + 1

    def _refuse(self, event: Event, previous: int) -> None:
        """Raise unless ``event`` is an exact replay of what is stored at its sequence."""
        if 0 < event.sequence <= previous:
            if self._stored_event(event.session_id, event.sequence) == event:
                return
            raise HarnessError("ledger-failed", CONFLICT)
        raise HarnessError("ledger-failed", GAP)

    def seed(self, session_id: str, last: int) -> None:
        """Record a session's last stored sequence when the store already knows it."""
        self._last.setdefault(session_id, last)

    def reset(self, session_id: str, last: int) -> None:
        """Take ``last`` as the session's last sequence (another writer may have appended)."""
        self._last[session_id] = last

    def forget(self, session_id: str) -> None:
        """Drop what is known of the session: its next append re-reads the stored last."""
        self._last.pop(session_id, None)

    def last(self, session_id: str) -> int | None:
        return self._last.get(session_id)


#: Seconds an owner on another host keeps a claim without renewing it (same-host owners are
#: checked exactly: process id and start time).
LEASE = 60.0


def holder_alive(owner: str | None, renewed_at: float, now: float) -> bool:
    """Whether a recorded claim still holds: its owner process lives (or its lease runs)."""
    if not owner:
        return False
    alive = owner_alive(owner.rsplit("#", 1)[0])
    return alive if alive is not None else now - renewed_at < LEASE


def check_prunable(session_id: str, status: str | None, last: int, archived_through: int) -> None:
    """Refuse to prune a session that is open, or has events past what was archived (the
    checks every :class:`~harness_core.ledger.PruningStore` makes inside its transaction)."""
    if status != "closed":
        raise HarnessError(
            "invalid-request", f"session {session_id} is open: close or reconcile it first"
        )
    if last != archived_through:
        raise HarnessError(
            "invalid-request",
            f"session {session_id} has events past its archive (sequence {last}, "
            f"archived {archived_through})",
        )
