"""Live tail: a session's new events as an async iterator, for every store that can.

A store that can tail better than by polling (PostgreSQL: LISTEN/NOTIFY) has a ``tail`` method
(:class:`TailingStore`); :func:`follow` uses it, and polls ``store.events`` for any other store
(SQLite sees other processes' commits; memory sees its own process; JSONL re-reads what other
processes appended to its file). Reads run in a worker thread, so a tail never blocks the event
loop, under asyncio or trio. The iterator never ends by itself: the caller stops it (``break``,
cancellation). Events come in sequence order, each once, starting after ``after``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol, runtime_checkable

import anyio
import anyio.to_thread
from harness_hookspecs import Event, LedgerStore

#: Seconds between two reads when nothing new came (local stores: a read is cheap).
POLL_INTERVAL = 0.02
#: Events read at most per poll (a long backlog comes in pages).
PAGE = 1000


@runtime_checkable
class TailingStore(Protocol):
    """A store with its own live tail (an async iterator of events after ``after``)."""

    def tail(self, session_id: str, *, after: int = 0) -> AsyncIterator[Event]: ...


async def poll_tail(
    read: Callable[[int], list[Event]], *, after: int = 0, interval: float = POLL_INTERVAL
) -> AsyncIterator[Event]:
    """Yield what ``read(after)`` returns, in order, forever; sleep ``interval`` when idle."""
    last = after
    while True:
        events = await anyio.to_thread.run_sync(read, last)
        for event in events:
            if event.sequence <= last:
                continue  # a store never returns these; guards against a reordered page
            last = event.sequence
            yield event
        if len(events) < PAGE:
            await anyio.sleep(interval)


def follow(
    store: LedgerStore, session_id: str, *, after: int = 0, interval: float = POLL_INTERVAL
) -> AsyncIterator[Event]:
    """The live tail of ``session_id``: the store's own, or polling ``store.events``."""
    if isinstance(store, TailingStore):
        return store.tail(session_id, after=after)
    return poll_tail(
        lambda last: store.events(session_id, after=last, limit=PAGE),
        after=after,
        interval=interval,
    )


__all__ = ["PAGE", "POLL_INTERVAL", "TailingStore", "follow", "poll_tail"]
