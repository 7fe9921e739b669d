"""The viewer's index of every session in the ledger: search, filters, facets and paging.

The sessions page must stay fast over thousands of sessions without a query per row, so the
server keeps one :class:`Entry` per session (its record, its running totals, the lowered text of
its prompts and answers) and brings it up to date from the events recorded since the last look:
one ``list_sessions`` and, per session, a read of its new events (none, mostly). The whole refresh
and the query run in one worker thread (:meth:`Catalog.page`), never on the event loop.

Only the ledger's public store members are used (``list_sessions``, ``events``, ``claimed``), so
any store works; the ledger stays the one source of truth (the index is a cache of it).
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import define, field, frozen
from harness_hookspecs import Event, HarnessError, SessionRecord
from harness_hookspecs import events as ev

from ..export import session_state
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
        entries = self.refresh(store)
        since = ""
        if query.since:
            moment = (now or datetime.now(UTC)) - SINCE[query.since]
            since = moment.strftime("%Y-%m-%dT%H:%M:%S")
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


def catalog_of(app_state: Any) -> Catalog:
    """The app's one catalog (made on first use: it lives as long as the server)."""
    catalog: Catalog | None = getattr(app_state, "catalog", None)
    if catalog is None:
        catalog = app_state.catalog = Catalog()
    return catalog
