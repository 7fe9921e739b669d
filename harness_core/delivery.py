"""Durable before delivered: what the controller recorded reaches observers (and a turn's
iterator) only once the ledger made it durable, and no flush runs that would cover nothing."""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from typing import Any

import anyio
from harness_hookspecs import CommitsOnAppend, Event, LedgerStore

from .ledger import _nothing, durable_waiter, flusher
from .observer_queue import CLOSE_GRACE, DEFAULT_OBSERVER_QUEUE, AsyncObserver


class Delivery:
    """The controller's record of what was appended, what is durable, what observers saw."""

    def __init__(
        self,
        ledger: LedgerStore,
        hook: Any,
        observers: list[Any] | None = None,
        *,
        spawn: Callable[[], Any] = lambda: None,
        observer_queue: int = DEFAULT_OBSERVER_QUEUE,
    ) -> None:
        """``spawn``: the task group async observers' workers run in (the controller's, while
        it runs); ``observer_queue``: how many events each async observer may be behind by."""
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
        #: the runtime's own listeners (the host's after_tool hooks), called after the plugins
        self.listeners: list[Any] = []
        #: failures per observer (its plugin name); each is reported once on stderr
        self.observer_failures: dict[str, int] = {}
        self._spawn = spawn
        self._observer_queue = observer_queue
        #: each ``async def`` observer (by its hook implementation) and its queue
        self.async_observers: dict[int, AsyncObserver] = {}

    def recorded(self, event: Event) -> None:
        self._appended += 1
        # Kept for the observers (pluggy's own list, read in place: no copy per event); an
        # observer registered later sees what is recorded from then on.
        if self._observers is None or self._observers or self.listeners:
            self._waiting.append(event)

    @property
    def observed(self) -> bool:
        """Whether any plugin observes events (``on_event``), or a runtime listener."""
        if self.listeners:
            return True
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
            self._notify(event)

    def _notify(self, event: Event) -> None:
        """Each observer on its own: one that raises is reported (once, by name) and the
        others still see the event. pluggy's order: the last registered first."""
        observers = self._observers
        if observers is None:
            observers = self._hook.on_event.get_hookimpls()
        if any(impl.hookwrapper or getattr(impl, "wrapper", False) for impl in observers):
            self._guarded(self._hook.on_event, event, "on_event")
            return  # a wrapper around observers: pluggy runs the chain
        for impl in reversed(observers):
            if inspect.iscoroutinefunction(impl.function):
                self._queued(impl).put(event)  # never awaited here: a slow one drops, not brakes
                continue
            self._guarded(impl.function, event, _observer_name(impl))
        for listener in self.listeners:
            self._guarded(listener, event, "after_tool")

    def _queued(self, impl: Any) -> AsyncObserver:
        observer = self.async_observers.get(id(impl))
        if observer is None:
            observer = AsyncObserver(
                _observer_name(impl), impl.function, self._observer_queue, self._spawn
            )
            self.async_observers[id(impl)] = observer
        return observer

    async def observers_idle(self, timeout: float | None = None) -> bool:
        """Wait until every async observer handled what it was given (``False`` on timeout)."""
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            for observer in list(self.async_observers.values()):
                await observer.wait_idle()
            return True
        return False

    async def close_observers(self, grace: float = CLOSE_GRACE) -> None:
        """Give async observers ``grace`` seconds to catch up, stop feeding them, report loss."""
        await self.observers_idle(grace)
        for observer in self.async_observers.values():
            observer.close()
            observer.report()

    def _guarded(self, observer: Any, event: Event, name: str) -> None:
        try:
            observer(event=event)
        except Exception:
            self.observer_errors += 1
            failures = self.observer_failures.get(name, 0)
            self.observer_failures[name] = failures + 1
            if failures == 0:
                print(f"harness: the on_event observer {name} failed; continuing", file=sys.stderr)

    async def flush(self) -> None:
        """Make everything recorded durable as far as the store can (its fsync included)."""
        mark = self._appended
        if self._covered < mark or self._flush is not self._durable:
            await self._flush()
            self._covered = max(self._covered, mark)


def _observer_name(impl: Any) -> str:
    """The name it was registered under; an unnamed object (pluggy names it by its repr) by its
    class and identity, so two of one class stay apart."""
    name = str(impl.plugin_name)
    if name.startswith("<") or len(name) > 64:
        return f"{type(impl.plugin).__name__}@{id(impl.plugin):x}"
    return name
