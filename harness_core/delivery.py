"""Durable before delivered: what the controller recorded reaches observers (and a turn's
iterator) only once the ledger made it durable, and no flush runs that would cover nothing."""

from __future__ import annotations

import sys
from typing import Any

from harness_hookspecs import CommitsOnAppend, Event, LedgerStore

from .ledger import _nothing, durable_waiter, flusher


class Delivery:
    """The controller's record of what was appended, what is durable, what observers saw."""

    def __init__(self, ledger: LedgerStore, hook: Any, observers: list[Any] | None = None) -> None:
        self._hook = hook
        #: the ``on_event`` implementations (pluggy's list, kept current by pluggy), else asked
        self._observers = observers
        self._flush = flusher(ledger)  # the store's full flush (an fsync for JSONL)
        self._durable = durable_waiter(ledger, self._flush)  # what delivery waits for
        #: what is appended is durable at once (memory, JSONL: see durable_waiter): no wait
        self.instant = isinstance(ledger, CommitsOnAppend) and bool(ledger.commits_on_append)
        #: a flush has nothing to wait for (memory): ending a turn needs no shielded wait
        self.free_flush = self._flush is _nothing
        self._waiting: list[Event] = []  # recorded, not yet shown to observers
        self._appended = 0  # events appended through this controller
        self._covered = 0  # of those, how many a finished flush covered
        self.observer_errors = 0

    def recorded(self, event: Event) -> None:
        self._appended += 1
        # Kept for the observers (pluggy's own list, read in place: no copy per event); an
        # observer registered later sees what is recorded from then on.
        if self._observers is None or self._observers:
            self._waiting.append(event)

    @property
    def observed(self) -> bool:
        """Whether any plugin observes events (``on_event``)."""
        if self._observers is not None:
            return bool(self._observers)
        return bool(self._hook.on_event.get_hookimpls())

    async def deliver(self, *, seen: bool = False) -> None:
        """Show what was recorded to observers once it is durable.

        ``seen``: the caller is about to hand events out too (a turn's iterator), so wait for
        durability even when no observer is waiting.
        """
        batch, self._waiting = self._waiting, []
        if batch and not self.observed:
            batch = []  # nobody observes
        if (batch or seen) and self._covered < self._appended:
            mark = self._appended
            await self._durable()
            self._covered = max(self._covered, mark)
        for event in batch:
            try:
                self._hook.on_event(event=event)
            except Exception:
                self.observer_errors += 1
                if self.observer_errors == 1:
                    print("harness: an on_event observer failed; continuing", file=sys.stderr)

    async def flush(self) -> None:
        """Make everything recorded durable as far as the store can (its fsync included)."""
        mark = self._appended
        if self._covered < mark or self._flush is not self._durable:
            await self._flush()
            self._covered = max(self._covered, mark)
