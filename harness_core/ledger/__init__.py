"""Ledger stores: where every event is recorded, and the source of truth for reading back.

URLs: ``memory:``; ``jsonl:DIR`` or ``jsonl:///abs/dir``; ``sqlite:PATH`` or
``sqlite:///abs/path.sqlite`` (the default, ``sqlite:.harness/ledger.sqlite`` relative to the
current directory, or ``$HARNESS_LEDGER``). Plugins add schemes with ``register_ledger_stores``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, runtime_checkable

import anyio.to_thread
from harness_hookspecs import CommitsOnAppend, HarnessError, LedgerStore, NotifyingStore

from .memory import MemoryStore

ENV_LEDGER = "HARNESS_LEDGER"
DEFAULT_LEDGER_URL = "sqlite:.harness/ledger.sqlite"


class _SqliteScheme:
    """``sqlite:`` URLs: the store, and its schema for ``harness ledger migrate|check``."""

    def __call__(self, url: str) -> LedgerStore:
        from .sqlite import SqliteStore

        return SqliteStore(path_of(url, "sqlite"))

    def schema(self, url: str) -> LedgerSchema:
        from .sqlite_schema import SqliteSchema

        return SqliteSchema(path_of(url, "sqlite"))


def _jsonl(url: str) -> LedgerStore:
    from .jsonl import JsonlStore

    return JsonlStore(path_of(url, "jsonl"))


BUILTIN_SCHEMES: dict[str, Callable[[str], LedgerStore]] = {
    "memory": lambda url: MemoryStore(),
    "jsonl": _jsonl,
    "sqlite": _SqliteScheme(),
}


@runtime_checkable
class ClaimingStore(Protocol):
    """A store with per-session writer epochs that an orchestrator may move (PostgreSQL).

    ``claim`` refuses a session a live writer holds (``session-busy``), else bumps its epoch
    and makes this store its writer; appends of any store that claimed it before are then
    refused (fenced). ``take_over`` does the same even while that writer lives: for a host
    that decides who runs a session (Temporal presumes a worker lost, dead or not).
    ``writer_epoch`` reads the current epoch.
    """

    def claim(self, session_id: str) -> int: ...

    def take_over(self, session_id: str) -> int: ...

    def writer_epoch(self, session_id: str) -> int: ...


class LedgerSchema(Protocol):
    """A ledger's schema, managed on purpose (``harness ledger migrate|check``); stores also
    migrate on open, so this is for operators who choose when, and with which role.

    ``version``: the version this code writes. ``pending()``: the version found (0: none yet)
    and the statements ``migrate`` would run (a dry run, nothing changed). ``migrate()``:
    create or upgrade the schema in one transaction; the version found before. ``check()``:
    (what, whether it holds) for the version, the append-only triggers and, where the database
    has them, the role's privileges. Each raises ``ledger-failed`` when the ledger cannot be
    reached or is of another kind or a newer version.
    """

    version: int

    def pending(self) -> tuple[int, list[str]]: ...

    def migrate(self) -> int: ...

    def check(self) -> list[tuple[str, bool]]: ...


@runtime_checkable
class ManagedScheme(Protocol):
    """A registered ledger factory (``register_ledger_stores``) whose schema can be managed:
    ``factory(url)`` opens the store, ``factory.schema(url)`` its :class:`LedgerSchema`."""

    def __call__(self, url: str) -> LedgerStore: ...

    def schema(self, url: str) -> LedgerSchema: ...


@runtime_checkable
class PruningStore(Protocol):
    """A store that can remove a closed session once it is archived (``harness ledger prune``,
    :mod:`harness_core.prune`).

    ``prune_session`` removes the session's events and record in one transaction and keeps a
    tombstone (its id, when, its last sequence); nothing else may be deleted. It refuses, with
    nothing removed: a session that is not there (``session-not-found``), one still open or
    whose last sequence is not ``archived_through`` - the archive would miss events
    (``invalid-request``), and one a live writer holds (``session-busy``). Returns the number
    of events removed.
    """

    def prune_session(self, session_id: str, *, archived_through: int) -> int: ...


def path_of(url: str, scheme: str) -> str:
    """``scheme:rel/path`` -> ``rel/path``; ``scheme:///abs/path`` -> ``/abs/path``."""
    rest = url[len(scheme) + 1 :]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):
            raise HarnessError(
                "invalid-request", f"{scheme} URLs are {scheme}:PATH or {scheme}:///ABS"
            )
    if not rest:
        raise HarnessError("invalid-request", f"the {scheme} ledger URL has no path")
    return rest


async def flush_async(store: LedgerStore) -> None:
    """``store.flush()`` without blocking the event loop.

    A :class:`NotifyingStore` (SQLite) calls back from its writer thread on asyncio, one thread
    hop instead of a worker thread's round trip; a :class:`CommitsOnAppend` store whose flush
    does nothing more (memory) is not flushed; anything else runs ``flush`` in a thread.
    """
    await flusher(store)()


def flusher(store: LedgerStore) -> Callable[[], Awaitable[None]]:
    """:func:`flush_async` for ``store``, with the store's kind looked up once."""
    committing = isinstance(store, CommitsOnAppend) and store.commits_on_append
    if committing and not store.syncs_on_flush:  # type: ignore[attr-defined]
        return _nothing
    if isinstance(store, NotifyingStore):
        return lambda: _notified(store)
    return lambda: anyio.to_thread.run_sync(store.flush)


def durable_waiter(
    store: LedgerStore, flush: Callable[[], Awaitable[None]] | None = None
) -> Callable[[], Awaitable[None]]:
    """What to await before delivering what was appended: nothing for a store that commits on
    append (its events already survive a crash of the process), else its flush (``flush``,
    the store's :func:`flusher`, when the caller has it already)."""
    if isinstance(store, CommitsOnAppend) and store.commits_on_append:
        return _nothing
    return flush if flush is not None else flusher(store)


async def _nothing() -> None:
    return None


async def _notified(store: NotifyingStore) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another backend (trio)
        await anyio.to_thread.run_sync(store.flush)  # type: ignore[attr-defined]
        return
    done: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not done.done():
            done.set_result(None)

    if store.flush_notify(lambda: loop.call_soon_threadsafe(wake)):
        await done
        store.raise_failure()


def ledger_schema(
    url: str, *, schemes: Mapping[str, Callable[[str], LedgerStore]] | None = None
) -> LedgerSchema:
    """The :class:`LedgerSchema` of the ledger at ``url``; ``invalid-request`` for a scheme
    whose schema is not managed (memory, JSONL)."""
    scheme = url.partition(":")[0]
    factory = {**BUILTIN_SCHEMES, **(schemes or {})}.get(scheme)
    if not isinstance(factory, ManagedScheme):
        raise HarnessError(
            "invalid-request", f"the {scheme[:30]!r} ledger has no schema to migrate or check"
        )
    return factory.schema(url)


def open_ledger(
    url: str | None = None,
    *,
    schemes: Mapping[str, Callable[[str], LedgerStore]] | None = None,
) -> LedgerStore:
    """Open the ledger at ``url`` (default: ``$HARNESS_LEDGER`` or the SQLite default)."""
    url = url or os.environ.get(ENV_LEDGER) or DEFAULT_LEDGER_URL
    scheme, sep, _ = url.partition(":")
    known = {**BUILTIN_SCHEMES, **(schemes or {})}
    factory = known.get(scheme) if sep else None
    if factory is None:
        raise HarnessError("invalid-request", f"unknown ledger URL scheme {scheme[:30]!r}")
    return factory(url)


__all__ = [
    "BUILTIN_SCHEMES",
    "DEFAULT_LEDGER_URL",
    "ENV_LEDGER",
    "ClaimingStore",
    "LedgerSchema",
    "ManagedScheme",
    "MemoryStore",
    "PruningStore",
    "durable_waiter",
    "flush_async",
    "flusher",
    "ledger_schema",
    "open_ledger",
]
