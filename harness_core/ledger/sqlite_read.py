"""A SQLite ledger read without writing: the read-only commands (``harness sessions``,
``events``, ``export``) and the viewer's listing open it so a folder with a ledger is never
changed by reading it.

An existing ledger is read through a ``mode=ro`` connection (``immutable`` when no writer has it
open, so SQLite creates no -wal/-shm files): no schema creation, no migration, no writer thread.
Besides the store protocol's reads it answers a text search and the listing's summaries in SQL.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from collections.abc import Iterable
from typing import Any

from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError, SessionRecord

from ..serialize import loads_record
from .base import event_from_row
from .sqlite import SCHEMA_VERSION, SELECT_EVENTS
from .sqlite_schema import unopened

#: A turn's start and its terminals: the last of them says whether a turn is open.
TURN_TYPES = ("turn.started", *sorted(TERMINAL_TYPES))
#: Event types whose text ``harness sessions -q`` searches (prompts and answers).
SEARCHED_TYPES = ("turn.started", "message.delta", "message.completed", "turn.completed")


class ReadOnlySqlite:
    """The read side of :class:`~harness_core.ledger.sqlite.SqliteStore` over a ``mode=ro``
    connection, plus a text search the generic store protocol has no room for."""

    def __init__(self, connection: sqlite3.Connection, empty: bool) -> None:
        self._db = connection
        self._empty = empty

    @classmethod
    def open(cls, path: str, *, live: bool = False) -> Any:
        """The ledger at ``path`` read-only; ``live``: a writer has it open (it is never read
        as immutable, so every later commit is seen)."""
        # A ledger no writer has open has no -wal file; reading it as immutable keeps SQLite
        # from creating -wal/-shm files beside it. With a writer about, read through its WAL.
        quiet = not live and not os.path.exists(path + "-wal")
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
            raise unopened(path, " (not a database?)") from None
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
        from .sqlite import SqliteStore

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

        from .base import holder_alive

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
        rows = self._rows(SELECT_EVENTS, (session_id, after, -1 if limit is None else limit))
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

    def data_version(self) -> int:
        """A number that changes whenever another connection has committed to the ledger since
        the last call (SQLite's ``PRAGMA data_version``): an answer read before is still good
        while it stays the same."""
        rows = self._rows("PRAGMA data_version", ())
        return int(rows[0][0]) if rows else 0

    def catalog_rows(self) -> list[tuple[Any, ...]]:
        """Every session, newest first, as ``(session_id, harness, status, created_at,
        last_turn_type, claim_owner, claim_renewed_at)``: what the viewer's sessions page needs
        to filter, count and order without decoding a record or an event. ``last_turn_type`` is
        the type of an open session's last ``turn.*`` start or terminal (``None`` when closed
        or turnless), read backwards through the session's own events (the primary key)."""
        marks = ", ".join("?" for _ in TURN_TYPES)
        return self._rows(
            "SELECT s.session_id, s.provider, s.status, s.created_at, CASE WHEN s.status = "
            "'closed' THEN NULL ELSE (SELECT e.type FROM events e WHERE e.session_id = "
            f"s.session_id AND e.type IN ({marks}) ORDER BY e.sequence DESC LIMIT 1) END, "
            "c.owner, c.renewed_at FROM sessions s LEFT JOIN claims c "
            "ON c.session_id = s.session_id ORDER BY s.created_at DESC, s.session_id",
            TURN_TYPES,
        )

    def turn_states(self, session_ids: list[str]) -> dict[str, tuple[str | None, int]]:
        """Per session of ``session_ids``: the type of its last ``turn.*`` start or terminal
        (``None`` without a turn) and its last sequence, in one query."""
        if not session_ids:
            return {}
        ids = ", ".join("?" for _ in session_ids)
        marks = ", ".join("?" for _ in TURN_TYPES)
        rows = self._rows(
            f"SELECT s.session_id, (SELECT e.type FROM events e WHERE e.session_id = "
            f"s.session_id AND e.type IN ({marks}) ORDER BY e.sequence DESC LIMIT 1), "
            "(SELECT MAX(e.sequence) FROM events e WHERE e.session_id = s.session_id) "
            f"FROM sessions s WHERE s.session_id IN ({ids})",
            (*TURN_TYPES, *session_ids),
        )
        return {sid: (kind, int(last or 0)) for sid, kind, last in rows}

    def turn_starts(self, session_id: str) -> list[int]:
        """The sequences of the session's ``turn.started`` events, in order (nothing decoded):
        where its last N turns begin, for a page that shows only those."""
        rows = self._rows(
            "SELECT sequence FROM events WHERE session_id = ? AND type = 'turn.started' "
            "ORDER BY sequence",
            (session_id,),
        )
        return [int(row[0]) for row in rows]

    def delegating(self, session_ids: list[str], tool_names: Iterable[str]) -> set[str]:
        """Those of ``session_ids`` whose events start a tool named one of ``tool_names`` (a
        delegation call): read through each session's own events (the primary key), never a
        scan of the ledger."""
        names = tuple(tool_names)
        if not session_ids or not names:
            return set()
        ids = ", ".join("?" for _ in session_ids)
        marks = ", ".join("?" for _ in names)
        rows = self._rows(
            f"SELECT DISTINCT session_id FROM events WHERE session_id IN ({ids}) "
            f"AND type = 'tool.started' AND json_extract(payload, '$.name') IN ({marks})",
            (*session_ids, *names),
        )
        return {row[0] for row in rows}

    def children(self, session_ids: list[str]) -> dict[str, list[str]]:
        """The child sessions (delegation) of each of ``session_ids`` that has any, oldest
        first, in one query."""
        if not session_ids:
            return {}
        ids = ", ".join("?" for _ in session_ids)
        found: dict[str, list[str]] = {}
        for parent, child in self._rows(
            "SELECT json_extract(record, '$.parent_session_id'), session_id FROM sessions "
            f"WHERE json_extract(record, '$.parent_session_id') IN ({ids}) "
            "ORDER BY created_at, session_id",
            tuple(session_ids),
        ):
            found.setdefault(parent, []).append(child)
        return found

    def summaries(self, session_ids: list[str]) -> dict[str, dict[str, Any]]:
        """What :func:`harness_core.cli.reading.summarize` computes, in four queries (no event
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
