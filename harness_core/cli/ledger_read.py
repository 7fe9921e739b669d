"""Open a ledger for the read-only commands without creating anything.

``harness sessions`` in a folder with no ledger must not leave ``.harness/ledger.sqlite`` behind:
a missing SQLite file or JSONL directory is "no ledger" (``None``), and an existing SQLite ledger
is read through a ``mode=ro`` connection (no schema creation, no migration, no writer thread).
Other schemes (plugins' ledgers) are opened as they are: a server ledger creates no local file.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from typing import Any

from harness_hookspecs import Event, HarnessError, SessionRecord

from ..ledger import DEFAULT_LEDGER_URL, ENV_LEDGER, open_ledger, path_of
from ..ledger.base import event_from_row
from ..ledger.sqlite import _SELECT_EVENTS, SCHEMA_VERSION
from ..serialize import loads_record
from .errors import CliError

#: Event types whose text ``harness sessions -q`` searches (prompts and answers).
SEARCHED_TYPES = ("turn.started", "message.delta", "message.completed", "turn.completed")


def ledger_url(url: str | None) -> str:
    return url or os.environ.get(ENV_LEDGER) or DEFAULT_LEDGER_URL


def open_for_reading(url: str | None) -> Any | None:
    """The store at ``url`` opened read-only, or ``None`` when there is no ledger there."""
    from ..plugins import get_plugins

    url = ledger_url(url)
    scheme = url.partition(":")[0]
    if scheme == "sqlite":
        path = path_of(url, "sqlite")
        if not os.path.exists(path):
            return None
        return ReadOnlySqlite.open(path)
    if scheme == "jsonl" and not os.path.isdir(path_of(url, "jsonl")):
        return None
    return open_ledger(url, schemes=get_plugins().ledger_schemes)


#: A prefix shorter than this is taken as a whole id (git takes 4 too).
MIN_PREFIX = 4
#: Candidates an ambiguous prefix lists, at most.
SHOWN_CANDIDATES = 5


def expand_session_id(url: str | None, text: str) -> str:
    """The full id of the session ``text`` names: itself when a session has that id, else the
    one session whose id starts with it (git style). An ambiguous prefix is
    ``invalid-request`` listing the candidates; no match leaves ``text`` as it is (the command
    then says ``session-not-found``)."""
    if len(text) < MIN_PREFIX:
        return text
    store = open_for_reading(url)
    if store is None:
        return text
    try:
        if store.get_session(text) is not None:
            return text
        starting = getattr(store, "ids_starting", None)
        if starting is not None:
            matches: list[str] = starting(text, SHOWN_CANDIDATES + 1)
        else:  # a store without the range query: its listing
            ids = sorted(r.session_id for r in store.list_sessions())
            matches = [i for i in ids if i.startswith(text)][: SHOWN_CANDIDATES + 1]
    finally:
        store.close()
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(matches[:SHOWN_CANDIDATES])
        more = ", ..." if len(matches) > SHOWN_CANDIDATES else ""
        raise CliError(
            "invalid-request", f"the session id prefix {text!r} is ambiguous: {shown}{more}"
        )
    return text


def resolve_session(args: Any) -> None:
    """``args.session`` (an id or a unique prefix of one) made the full id, in place."""
    if getattr(args, "session", None):
        args.session = expand_session_id(getattr(args, "ledger", None), args.session)


def latest_open_session(url: str | None) -> str:
    """The id of the newest session in the ledger that is not closed (``--continue``)."""
    store = open_for_reading(url)
    try:
        records = store.list_sessions() if store is not None else []
    finally:
        if store is not None:
            store.close()
    for record in records:  # newest first
        if record.status != "closed":
            return str(record.session_id)
    raise CliError("session-not-found", f"no open session to continue in {ledger_url(url)}")


class ReadOnlySqlite:
    """The read side of :class:`~harness_core.ledger.sqlite.SqliteStore` over a ``mode=ro``
    connection, plus a text search the generic store protocol has no room for."""

    def __init__(self, connection: sqlite3.Connection, empty: bool) -> None:
        self._db = connection
        self._empty = empty

    @classmethod
    def open(cls, path: str) -> Any:
        # A ledger no writer has open has no -wal file; reading it as immutable keeps SQLite
        # from creating -wal/-shm files beside it. With a writer about, read through its WAL.
        quiet = not os.path.exists(path + "-wal")
        # POSIX keeps a leading "//" (sqlite:////abs); in a URI that would be an authority.
        uri = "file:/" + urllib.parse.quote(os.path.abspath(path).lstrip("/"))
        uri += "?immutable=1" if quiet else "?mode=ro"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
            connection.execute("PRAGMA busy_timeout=30000")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            tables = connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            ).fetchone()[0]
        except sqlite3.Error:
            raise HarnessError(
                "ledger-failed", "the SQLite ledger could not be opened (not a database?)"
            ) from None
        if version == SCHEMA_VERSION:
            return cls(connection, empty=False)
        connection.close()
        if version == 0 and not tables:
            return cls(sqlite3.connect(":memory:"), empty=True)
        if version == 0:
            raise HarnessError("ledger-failed", "the SQLite file is not a harness ledger")
        if version > SCHEMA_VERSION:
            raise HarnessError(
                "ledger-failed", f"the ledger schema version {version} is newer than this harness"
            )
        # An older schema is migrated by the writing store (the one case a read writes).
        from ..ledger.sqlite import SqliteStore

        return SqliteStore(path)

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        if self._empty:
            return []
        try:
            return self._db.execute(sql, args).fetchall()
        except UnicodeEncodeError:  # a key SQLite cannot encode (non-UTF-8 argv) matches no row
            return []
        except sqlite3.Error:
            raise HarnessError("ledger-failed", "the SQLite ledger could not be read") from None

    def claimed(self, session_id: str) -> bool:
        """Whether a live process holds the session (its writer, per the ``claims`` table)."""
        import time

        from ..ledger.base import holder_alive

        rows = self._rows(
            "SELECT owner, renewed_at FROM claims WHERE session_id = ?", (session_id,)
        )
        return bool(rows) and holder_alive(rows[0][0], rows[0][1], time.time())

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self._rows("SELECT record FROM sessions WHERE session_id = ?", (session_id,))
        return loads_record(rows[0][0]) if rows else None

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Session ids that start with ``prefix`` (a range scan of the primary key)."""
        rows = self._rows(
            "SELECT session_id FROM sessions WHERE session_id >= ? AND session_id < ? "
            "ORDER BY session_id LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit),
        )
        return [row[0] for row in rows]

    def list_sessions(self, *, limit: int | None = None) -> list[SessionRecord]:
        rows = self._rows(
            "SELECT record FROM sessions ORDER BY created_at DESC, session_id LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [loads_record(row[0]) for row in rows]

    def events(self, session_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        rows = self._rows(_SELECT_EVENTS, (session_id, after, -1 if limit is None else limit))
        return [event_from_row(row) for row in rows]

    def last_sequence(self, session_id: str) -> int:
        rows = self._rows("SELECT MAX(sequence) FROM events WHERE session_id = ?", (session_id,))
        return int(rows[0][0] or 0) if rows else 0

    def search(self, text: str) -> set[str]:
        """Ids of sessions whose prompts or answers contain ``text`` (case-insensitive)."""
        pattern = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        marks = ", ".join("?" for _ in SEARCHED_TYPES)
        rows = self._rows(
            "SELECT DISTINCT session_id FROM events WHERE type IN (" + marks + ") AND "
            "lower(coalesce(json_extract(payload, '$.prompt'), json_extract(payload, '$.text'), "
            "'')) LIKE ? ESCAPE '\\'",
            (*SEARCHED_TYPES, pattern + "%"),
        )
        return {row[0] for row in rows}

    def summaries(self, session_ids: list[str]) -> dict[str, dict[str, Any]]:
        """What :func:`~harness_core.cli.reading.summarize` computes, in four queries (no event
        is decoded in Python): turns, last prompt, last event time, every usage report summed."""
        result = {
            sid: {
                "turns": 0,
                "usage": {"input_tokens": None, "output_tokens": None, "cost_usd": None},
                "last_prompt": "",
                "last_event_at": "",
            }
            for sid in session_ids
        }
        if not session_ids:
            return result
        ids = ", ".join("?" for _ in session_ids)
        args = tuple(session_ids)
        for sid, turns, _, prompt in self._rows(
            # With one max() in the query, SQLite takes the bare column from the max row.
            "SELECT session_id, count(*), MAX(sequence), json_extract(payload, '$.prompt') "
            f"FROM events WHERE type = 'turn.started' AND session_id IN ({ids}) "
            "GROUP BY session_id",
            args,
        ):
            result[sid]["turns"] = turns
            result[sid]["last_prompt"] = prompt or ""
        for sid, stamp in self._rows(
            "SELECT e.session_id, e.timestamp FROM events e JOIN (SELECT session_id, "
            f"MAX(sequence) AS seq FROM events WHERE session_id IN ({ids}) GROUP BY session_id) "
            "m ON e.session_id = m.session_id AND e.sequence = m.seq",
            args,
        ):
            result[sid]["last_event_at"] = stamp
        for sid, tin, tout, cost in self._rows(
            # SUM of NULLs is NULL: a total nobody reported stays unknown
            "SELECT session_id, SUM(json_extract(payload, '$.usage.input_tokens')), "
            "SUM(json_extract(payload, '$.usage.output_tokens')), "
            "SUM(json_extract(payload, '$.usage.cost_usd')) FROM events WHERE type = 'usage' "
            f"AND session_id IN ({ids}) GROUP BY session_id",
            args,
        ):
            result[sid]["usage"] = {"input_tokens": tin, "output_tokens": tout, "cost_usd": cost}
        return result

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self._db.close()

    # The read-only store refuses writes with the reason a caller can act on.
    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise HarnessError("ledger-failed", "this ledger was opened read-only")

    create_session = update_session = append = _read_only
