"""What the SQLite store commits: the writes it queues (events, session records, claims,
releases) sorted into one batch, and the statements that write a batch in a transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any, NamedTuple

from harness_hookspecs import SessionRecord

from ..digests import event_id_prefix
from .base import STOP, Waiter, event_row, record_row

INSERT_EVENT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#: Events go in multi-row INSERTs: each statement step releases and re-takes the GIL, and a
#: thread re-taking it from a busy event loop can wait a whole switch interval (5 ms), so a step
#: per row starves the writer thread. Up to :data:`EXACT_ROWS` rows are one statement of their
#: exact size (a flush's few events: one statement); a larger batch goes in statements of 512,
#: 256 and 128 rows, then the rest (at most three more).
EXACT_ROWS = 64
_LARGE_ROWS = (512, 256, 128)
_INSERT_ROWS = {
    count: "INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * count)
    for count in (*_LARGE_ROWS, *range(1, EXACT_ROWS + 1))
}
_RELEASE = "UPDATE claims SET owner = NULL WHERE session_id = ? AND epoch = ?"

#: Queued to wake the writer thread for staged writes that must reach the ledger soon.
NUDGE = object()
#: Queued after commits made outside the writer thread: it runs a WAL checkpoint.
CHECKPOINT = object()


class Release(NamedTuple):
    session_id: str
    epoch: int


class Claim(NamedTuple):
    """The first claim of a session this store just created: nobody else can hold it yet, so
    it rides with the next transaction instead of one of its own."""

    session_id: str
    owner: str
    stamp: float


class Session(NamedTuple):
    record: SessionRecord
    upsert: bool


class Staged(list[Any]):
    """Writes handed over together, in the order they were made."""

    __slots__ = ()


class Batch:
    """Queue items sorted by kind, in their order within each kind."""

    __slots__ = ("checkpoint", "claims", "releases", "rows", "sessions", "stop", "waiters")

    def __init__(self, items: Iterable[Any]) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.sessions: list[Session] = []
        self.releases: list[Release] = []
        self.claims: list[Claim] = []
        self.waiters: list[Waiter] = []
        self.stop = self.checkpoint = False
        for item in items:
            if type(item) is Staged:
                self._sort(item)
            else:
                self._sort((item,))

    def _sort(self, items: Iterable[Any]) -> None:
        rows = self.rows
        add = rows.append
        for item in items:
            kind = type(item)
            if kind is tuple:  # the events of one append (the usual item: checked first)
                for event in item:
                    add(event_row(event))
            elif kind is Waiter:
                self.waiters.append(item)
            elif kind is Session:
                self.sessions.append(item)
            elif kind is Release:
                self.releases.append(item)
            elif kind is Claim:
                self.claims.append(item)
            elif item is STOP:
                self.stop = True
            elif item is CHECKPOINT:
                self.checkpoint = True
            elif item is not NUDGE:  # another sequence of events
                rows += [event_row(e) for e in item]

    @property
    def writes(self) -> bool:
        return bool(self.rows or self.sessions or self.releases or self.claims)


Fence = Callable[[sqlite3.Connection, list[tuple[Any, ...]]], list[tuple[Any, ...]]]


def write(connection: sqlite3.Connection, batch: Batch, fence: Fence) -> None:
    """The batch's statements, inside a transaction the caller began (and commits)."""
    _insert_claims(connection, batch.claims)
    rows = fence(connection, batch.rows)
    for session in batch.sessions:
        write_session(connection, session)
    execute = connection.execute
    start, left = 0, len(rows)
    while left:
        count = next((size for size in _LARGE_ROWS if left >= size), min(left, EXACT_ROWS))
        execute(_INSERT_ROWS[count], list(chain.from_iterable(rows[start : start + count])))
        start += count
        left -= count
    for release in batch.releases:
        execute(_RELEASE, (release.session_id, release.epoch))


def write_each(
    connection: sqlite3.Connection,
    batch: Batch,
    fence: Fence,
    fail: Callable[[str], None],
    broken: set[str],
) -> None:
    """Like :func:`write`, one statement at a time, keeping every good one (a refused
    statement doesn't end the transaction) and reporting the refused ones to ``fail``. A
    session one event of which could not be written (not a duplicate: a full disk...) gets no
    later event (added to ``broken``): its sequence stays gap-free."""
    _insert_claims(connection, batch.claims)
    rows = fence(connection, batch.rows)
    for session in batch.sessions:
        try:
            write_session(connection, session)
        except (sqlite3.Error, ValueError):
            fail("a session could not be stored (duplicate or unwritable)")
    for row in rows:
        if row[0] in broken:
            continue
        try:
            connection.execute(INSERT_EVENT, row)
        except sqlite3.IntegrityError:  # its sequence is stored already (another writer's)
            fail("an event could not be stored (duplicate sequence or event id)")
        except (sqlite3.Error, ValueError):  # not stored at all (a full disk...): a gap
            broken.add(row[0])
            fail("an event could not be stored")
    for release in batch.releases:
        connection.execute(_RELEASE, (release.session_id, release.epoch))


def _insert_claims(connection: sqlite3.Connection, claims: list[Claim]) -> None:
    if claims:
        connection.executemany(
            "INSERT INTO claims VALUES (?, 1, ?, ?) ON CONFLICT(session_id) DO NOTHING",
            [(claim.session_id, claim.owner, claim.stamp) for claim in claims],
        )


def write_session(
    connection: sqlite3.Connection, session: Session, *, imported: bool = False
) -> None:
    """Store a session record (an upsert: an update). A new session's prefix goes into
    ``event_prefixes``; ``imported``: all_listed, its bundle's ids kept (``sqlite_schema``)."""
    values = record_row(session.record)
    if session.upsert:
        connection.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO "
            "UPDATE SET status=excluded.status, updated_at=excluded.updated_at, "
            "record=excluded.record",
            values,
        )
    else:
        connection.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", values)
        connection.execute(
            "INSERT INTO event_prefixes VALUES (?, ?, ?)",
            (values[0], event_id_prefix(values[0]), int(imported)),
        )
