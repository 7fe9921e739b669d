"""Open a ledger for the read-only commands without creating anything, and find sessions by id
prefix or as the latest open one.

``harness sessions`` in a folder with no ledger must not leave ``.harness/ledger.sqlite`` behind:
a missing SQLite file or JSONL directory is "no ledger" (``None``), and an existing SQLite ledger
is read through a ``mode=ro`` connection (no schema creation, no migration, no writer thread).
Other schemes (plugins' ledgers) are opened as they are: a server ledger creates no local file.
"""

from __future__ import annotations

import os
from typing import Any

from ..ledger import DEFAULT_LEDGER_URL, ENV_LEDGER, open_ledger, path_of
from .errors import CliError


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
        from ..ledger.sqlite_read import ReadOnlySqlite  # start-up: a new session opens none

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
