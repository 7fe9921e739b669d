"""The viewer's index of every session in the ledger: search, filters, facets and paging.

The sessions page must stay fast over thousands of sessions without a query per row, so the
server keeps one :class:`Entry` per session (its record, its running totals, the lowered text of
its prompts and answers) and brings it up to date from the events recorded since the last look:
one ``list_sessions`` and, per session, a read of its new events (none, mostly). The whole refresh
and the query run in one worker thread (:meth:`Catalog.page`), never on the event loop.

Only the ledger's public store members are used (``list_sessions``, ``events``, ``claimed``), so
any store works; the ledger stays the one source of truth (the index is a cache of it).

A SQLite ledger is asked in SQL instead (:class:`SqlCatalog`): keeping an entry per session
means decoding every record and reading every open session's events on each look, 23 s a look
over 100,000 sessions. There one query gives each session's harness, status, creation time and
last turn (no record or event decoded), the filters and counts run over those rows, the text
search is ``LIKE`` over the searched events, and only the page's own sessions are read whole;
what was read is kept while nobody commits to the ledger.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import define, field, frozen
from harness_hookspecs import Event, HarnessError, SessionRecord
from harness_hookspecs import events as ev

from ..export import session_state
from ..ledger.base import holder_alive
from .runner import Summary

#: The states a session can be in (see :func:`harness_core.export.session_state`).
STATES = ("running", "interrupted", "idle", "closed")
#: ``since`` choices of the sessions page: a label and how far back it reaches.
SINCE = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}
SINCE_LABELS = {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days"}
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: Searchable text kept per session, in characters (prompts and answers past it are not found).
MAX_TEXT = 200_000
#: How long a query is kept, in characters.
MAX_QUERY = 200


@frozen
class Query:
    """What the sessions page asks for (every field optional; ``page`` counts from 1)."""

    text: str = ""
    harness: str = ""
    state: str = field(default="", validator=lambda _i, _a, v: _check_state(v))
    since: str = field(default="", validator=lambda _i, _a, v: _check_since(v))
    page: int = 1
    per_page: int = PAGE_SIZE

    @classmethod
    def from_params(cls, params: Any) -> Query:
        """From a request's query parameters; a bad value is ``invalid-request`` naming it."""
        page = _whole(params.get("page"), "page", 1, 10**9)
        per_page = _whole(params.get("per_page"), "per_page", PAGE_SIZE, MAX_PAGE_SIZE)
        try:
            return cls(
                text=(params.get("q") or "").strip()[:MAX_QUERY],
                harness=(params.get("harness") or "").strip(),
                state=params.get("state") or "",
                since=params.get("since") or "",
                page=page,
                per_page=per_page,
            )
        except ValueError as error:
            raise HarnessError("invalid-request", str(error)) from None

    def words(self) -> list[str]:
        return self.text.lower().split()

    def params(self, **changes: Any) -> dict[str, str]:
        """This query as URL parameters (defaults left out), with ``changes`` applied."""
        values = {
            "q": self.text,
            "harness": self.harness,
            "state": self.state,
            "since": self.since,
            "page": "" if self.page == 1 else str(self.page),
            "per_page": "" if self.per_page == PAGE_SIZE else str(self.per_page),
        }
        values.update({key: str(value) for key, value in changes.items()})
        if changes and "page" not in changes:
            values["page"] = ""  # a new filter starts at the first page
        return {key: value for key, value in values.items() if value and value != "1"}


def _check_state(value: str) -> None:
    if value and value not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}")


def _check_since(value: str) -> None:
    if value and value not in SINCE:
        raise ValueError(f"since must be one of {', '.join(SINCE)}")


def _whole(raw: str | None, name: str, default: int, maximum: int) -> int:
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= maximum:
        raise HarnessError("invalid-request", f"{name} must be an integer from 1 to {maximum}")
    return int(raw)


@define
class Entry:
    """One session as the sessions page knows it."""

    record: SessionRecord
    summary: Summary = field(factory=Summary)
    #: prompts and answers, lowered, for the text search (at most ``MAX_TEXT`` characters)
    text: str = ""
    last_prompt: str = ""
    #: ``running`` / ``interrupted`` / ``idle`` / ``closed``, as of the last refresh
    state: str = "idle"
    #: ``session.closed`` was read: the session's events are all in
    ended: bool = False

    def add(self, event: Event) -> None:
        if event.sequence <= self.summary.last_sequence:
            return
        self.summary.add(event)
        payload = event.payload
        if isinstance(payload, ev.TurnStarted):
            self.last_prompt = payload.prompt
            self._keep(payload.prompt)
        elif isinstance(payload, ev.MessageDelta | ev.MessageCompleted | ev.TurnCompleted):
            self._keep(payload.text or "")
        elif isinstance(payload, ev.SessionClosed):
            self.ended = True

    def _keep(self, text: str) -> None:
        room = MAX_TEXT - len(self.text)
        if room > 0 and text:
            self.text += "\n" + text[:room].lower()

    def matches(self, words: list[str]) -> bool:
        return all(word in self.text for word in words)


@frozen
class Page:
    """One page of sessions, newest first, with the counts the filters show."""

    entries: list[Entry]
    total: int  # sessions matching the whole query
    query: Query
    #: sessions per harness / per state that match the rest of the query (datasette's facets)
    harness_counts: dict[str, int]
    state_counts: dict[str, int]
    #: every session the ledger holds
    all_sessions: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.query.per_page))

    @property
    def first(self) -> int:
        """The 1-based position of the page's first session (0 when there is none)."""
        return (self.query.page - 1) * self.query.per_page + 1 if self.entries else 0


class Catalog:
    """Every session's :class:`Entry`, kept up to date from the ledger on each look."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._sql: SqlCatalog | None = None

    def sql(self, store: Any) -> SqlCatalog | None:
        """The SQL side for a SQLite ledger (opened once), ``None`` for any other store."""
        with self._lock:
            if self._sql is None or self._sql.path != _sqlite_path(store):
                path = _sqlite_path(store)
                if path is None:
                    return None
                self._sql = SqlCatalog(path)
            return self._sql

    def refresh(self, store: Any) -> list[Entry]:
        """Bring every entry up to date; return them newest first. Call from a worker thread."""
        with self._lock:
            records: list[SessionRecord] = store.list_sessions()
            entries = []
            for record in records:
                entry = self._entries.get(record.session_id)
                if entry is None:
                    entry = self._entries[record.session_id] = Entry(record)
                entry.record = record
                if not entry.ended:  # a closed session records nothing more: no read
                    for event in store.events(record.session_id, after=entry.summary.last_sequence):
                        entry.add(event)
                open_turn = None
                if record.status != "closed" and entry.summary.last_turn == "running":
                    open_turn = "running" if store.claimed(record.session_id) else "interrupted"
                entry.state = session_state(record.status, open_turn)
                entries.append(entry)
            return entries

    def page(self, store: Any, query: Query, now: datetime | None = None) -> Page:
        """The page ``query`` asks for, after a refresh. Call from a worker thread."""
        sql = self.sql(store)
        if sql is not None:
            return sql.page(store, query, now)
        entries = self.refresh(store)
        since = _since(query, now)
        words = query.words()

        def keep(entry: Entry, *, harness: bool = True, state: bool = True) -> bool:
            return (
                (not harness or not query.harness or entry.record.ref.harness == query.harness)
                and (not state or not query.state or entry.state == query.state)
                and (not since or entry.record.created_at >= since)
                and (not words or entry.matches(words))
            )

        harness_counts = Counter(e.record.ref.harness for e in entries if keep(e, harness=False))
        state_counts = Counter(e.state for e in entries if keep(e, state=False))
        matching = [e for e in entries if keep(e)]
        start = (query.page - 1) * query.per_page
        return Page(
            entries=matching[start : start + query.per_page],
            total=len(matching),
            query=query,
            harness_counts=dict(sorted(harness_counts.items())),
            state_counts={state: state_counts.get(state, 0) for state in STATES},
            all_sessions=len(entries),
        )


def _since(query: Query, now: datetime | None) -> str:
    """The oldest ``created_at`` the query's ``since`` keeps (``""``: any)."""
    if not query.since:
        return ""
    moment = (now or datetime.now(UTC)) - SINCE[query.since]
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _sqlite_path(store: Any) -> str | None:
    from ..ledger.sqlite import SqliteStore

    return store.path if isinstance(store, SqliteStore) else None


class SqlCatalog:
    """The sessions page over the SQLite ledger at ``path``, asked in SQL: the same pages,
    counts and search results as :class:`Catalog`. What it read is kept until anyone commits
    to the ledger (SQLite's data version), so paging and facets of a quiet ledger read nothing.
    """

    def __init__(self, path: str) -> None:
        from ..ledger.sqlite_read import ReadOnlySqlite

        self.path = path
        # The writing store's reads share one connection with its writer's flushes; the page
        # reads through a read-only connection of its own (WAL: it sees every commit).
        self._reader: Any = ReadOnlySqlite.open(path, live=True)
        # What was read at one data version: every session's row and the sessions per
        # searched word. A ledger nobody wrote to since is not read again (paging, facets).
        self._version: int | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._searched: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def page(self, store: Any, query: Query, now: datetime | None = None) -> Page:
        store.flush()  # what a caller recorded is committed before it is looked for
        reader = self._reader
        with self._lock:
            version = reader.data_version()
            if version != self._version:
                self._version, self._searched = None, {}
                self._rows = reader.catalog_rows()
                self._version = version
            found: set[str] | None = None
            for word in query.words():
                if word not in self._searched:
                    self._searched[word] = reader.search(word)
                hits = self._searched[word]
                found = hits if found is None else found & hits
            raw = self._rows
        since = _since(query, now)
        wall = time.time()
        alive: dict[str, bool] = {}

        def state_of(status: str, last: str | None, owner: str | None, renewed: float) -> str:
            open_turn = None
            if status != "closed" and last == "turn.started":
                if owner not in alive:
                    alive[owner] = holder_alive(owner, renewed, wall)  # type: ignore[index]
                open_turn = "running" if alive[owner] else "interrupted"  # type: ignore[index]
            return session_state(status, open_turn)

        rows = [
            (sid, harness, state_of(status, last, owner, renewed or 0.0), created)
            for sid, harness, status, created, last, owner, renewed in raw
        ]

        def keep(
            row: tuple[str, str, str, str], *, harness: bool = True, state: bool = True
        ) -> bool:
            sid, name, row_state, created = row
            return (
                (not harness or not query.harness or name == query.harness)
                and (not state or not query.state or row_state == query.state)
                and (not since or created >= since)
                and (found is None or sid in found)
            )

        harness_counts = Counter(row[1] for row in rows if keep(row, harness=False))
        state_counts = Counter(row[2] for row in rows if keep(row, state=False))
        matching = [row for row in rows if keep(row)]
        start = (query.page - 1) * query.per_page
        with self._lock:
            entries = self._entries(reader, matching[start : start + query.per_page])
        return Page(
            entries=entries,
            total=len(matching),
            query=query,
            harness_counts=dict(sorted(harness_counts.items())),
            state_counts={state: state_counts.get(state, 0) for state in STATES},
            all_sessions=len(rows),
        )

    def turn_starts(self, session_id: str) -> list[int]:
        """The sequences where the session's turns start, in order. Call from a worker thread."""
        with self._lock:  # one connection: its reads one at a time
            starts: list[int] = self._reader.turn_starts(session_id)
        return starts

    def summary(self, session_id: str) -> Summary:
        """The session's totals (:class:`Summary`) computed in SQL, no event decoded. Call from
        a worker thread, for a session nobody writes at the moment (the queries are separate)."""
        ids = [session_id]
        with self._lock:
            return _summary(
                self._reader.summaries(ids)[session_id],
                self._reader.turn_states(ids).get(session_id, (None, 0)),
            )

    @staticmethod
    def _entries(reader: Any, rows: list[tuple[str, str, str, str]]) -> list[Entry]:
        """The page's sessions read whole: record, totals, last prompt (a few queries)."""
        ids = [row[0] for row in rows]
        summed = reader.summaries(ids)
        turns = reader.turn_states(ids)
        entries = []
        for sid, _, state, _ in rows:
            record = reader.get_session(sid)
            if record is None:  # pruned between the two reads
                continue
            totals = summed[sid]
            entries.append(
                Entry(
                    record,
                    summary=_summary(totals, turns.get(sid, (None, 0))),
                    last_prompt=totals["last_prompt"],
                    state=state,
                    ended=record.status == "closed",
                )
            )
        return entries


def _summary(totals: dict[str, Any], turn_state: tuple[str | None, int]) -> Summary:
    """A :class:`Summary` from ``ReadOnlySqlite.summaries`` and ``turn_states`` answers."""
    last_type, last_sequence = turn_state
    usage = totals["usage"]
    return Summary(
        last_sequence=last_sequence,
        turns=totals["turns"],
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        cost_usd=usage["cost_usd"],
        last_turn=_turn_status(last_type),
        updated_at=totals["last_event_at"] or None,
    )


def _turn_status(last_type: str | None) -> str | None:
    """:attr:`Summary.last_turn` from the type of a session's last turn start or terminal."""
    if last_type is None:
        return None
    return "running" if last_type == "turn.started" else last_type.split(".", 1)[1]


def catalog_of(app_state: Any) -> Catalog:
    """The app's one catalog (made on first use: it lives as long as the server)."""
    catalog: Catalog | None = getattr(app_state, "catalog", None)
    if catalog is None:
        catalog = app_state.catalog = Catalog()
    return catalog
