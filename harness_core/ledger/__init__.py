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


def _sqlite(url: str) -> LedgerStore:
    from .sqlite import SqliteStore

    return SqliteStore(path_of(url, "sqlite"))


def _jsonl(url: str) -> LedgerStore:
    from .jsonl import JsonlStore

    return JsonlStore(path_of(url, "jsonl"))


BUILTIN_SCHEMES: dict[str, Callable[[str], LedgerStore]] = {
    "memory": lambda url: MemoryStore(),
    "jsonl": _jsonl,
    "sqlite": _sqlite,
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
    "MemoryStore",
    "durable_waiter",
    "flush_async",
    "flusher",
    "open_ledger",
]
