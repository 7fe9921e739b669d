"""Durable before delivered: what the controller recorded reaches observers (and a turn's
iterator) only once the ledger made it durable, and no flush runs that would cover nothing."""

from __future__ import annotations

import inspect
import math
import sys
from collections import deque
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
        max_backlog: int | None = None,
    ) -> None:
        """``spawn``: the task group async observers' workers run in (the controller's, while
        it runs); ``observer_queue``: how many events each async observer may be behind by;
        ``max_backlog``: see :attr:`max_backlog`."""
        if max_backlog is not None and (
            type(max_backlog) is not int or max_backlog < 1  # (not a bool, not a float)
        ):
            raise ValueError("max_backlog is at least one event, a whole number")
        #: events all turns together may record ahead of the ledger's commits before their
        #: producers wait for it (``None``: no bound beyond each turn's ``PENDING_MAX``)
        self.max_backlog = max_backlog
        self._hook = hook
        #: the ``on_event`` implementations (pluggy's list, kept current by pluggy), else asked
        self._observers = observers
        self._flush = flusher(ledger)  # the store's full flush (an fsync for JSONL)
        self._durable = durable_waiter(ledger, self._flush)  # what delivery waits for
        #: what is appended is durable at once (memory, JSONL: see durable_waiter): no wait
        self.instant = isinstance(ledger, CommitsOnAppend) and bool(ledger.commits_on_append)
        #: a flush has nothing to wait for (memory): ending a turn needs no shielded wait
        self.free_flush = self._flush is _nothing
        #: recorded, not yet shown to observers: (how many were appended with it, the event)
        self._waiting: deque[tuple[int, Event]] = deque()
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
        # the observers split by how they are fed, for the implementations of _split_key
        self._split_key: tuple[int, ...] | None = None
        self._shown: tuple[Any, ...] = ()  # called in delivery, once durable (pluggy's order)
        self._queues: tuple[AsyncObserver, ...] = ()  # fed at once; each waits for durability
        self._wrapped = False  # a wrapper around observers: pluggy runs the whole chain
        self._flushing: anyio.Event | None = None  # set when the durable wait under way ends

    def recorded(self, event: Event) -> None:
        self._appended += 1
        shown, queues = self._split()
        # An async observer's queue takes the event now, with how far the ledger must be
        # durable before its worker hands it over: the turn does not wait for the commit.
        for queue in queues:
            queue.put(event, self._appended)
        # The others see it in delivery, once durable; an observer registered later sees what
        # is recorded from then on.
        if shown or self.listeners:
            self._waiting.append((self._appended, event))

    def _split(self) -> tuple[tuple[Any, ...], tuple[AsyncObserver, ...]]:
        """The observers called in delivery, and the async ones fed through their queues."""
        observers = self._observers
        if observers is None:
            observers = self._hook.on_event.get_hookimpls()
        key = tuple(map(id, observers))  # pluggy's list, read in place: no copy per event
        if key != self._split_key:
            self._split_key = key
            self._wrapped = any(
                impl.hookwrapper or getattr(impl, "wrapper", False) for impl in observers
            )
            ordered = tuple(reversed(observers))  # pluggy's order: the last registered first
            if self._wrapped:
                self._shown, self._queues = ordered, ()
            else:
                self._shown = tuple(i for i in ordered if not _is_async(i))
                self._queues = tuple(self._queued(i) for i in ordered if _is_async(i))
        return self._shown, self._queues

    @property
    def observed(self) -> bool:
        """Whether anything must be shown events in delivery: a synchronous ``on_event``
        observer or a runtime listener (async observers are fed through their queues)."""
        return bool(self.listeners or self._split()[0])

    @property
    def appended(self) -> int:
        """How many events were appended through this controller (a mark for
        :meth:`durable_through` and :meth:`deliver`)."""
        return self._appended

    async def deliver(self, *, seen: bool = False, through: int | None = None) -> None:
        """Show what was recorded to observers once it is durable.

        ``seen``: the caller is about to hand events out too (a turn's iterator), so wait for
        durability even when no observer is waiting. ``through``: wait only until the first
        ``through`` events appended are durable (a turn's own, not those other turns recorded
        since); observers are shown what is durable by then, in order, and the rest later.
        Nothing is taken before the wait, so a cancel during it loses nothing.
        """
        waiting = self._waiting
        if waiting and not self.observed:
            waiting.clear()  # nobody observes
        if waiting or seen:
            await self.durable_through(self._appended if through is None else through)
        covered = self._covered
        while waiting and waiting[0][0] <= covered:
            self._notify(waiting.popleft()[1])

    def _notify(self, event: Event) -> None:
        """Each observer on its own: one that raises is reported (once, by name) and the
        others still see the event."""
        shown, _ = self._split()
        if self._wrapped:
            self._guarded(self._hook.on_event, event, "on_event")
        else:
            for impl in shown:
                self._guarded(impl.function, event, _observer_name(impl))
        for listener in self.listeners:
            self._guarded(listener, event, "after_tool")

    def _queued(self, impl: Any) -> AsyncObserver:
        observer = self.async_observers.get(id(impl))
        if observer is None:
            observer = AsyncObserver(
                _observer_name(impl),
                impl.function,
                self._observer_queue,
                self._spawn,
                durable=self.durable_through,
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

    @property
    def backlog(self) -> int:
        """Events appended through this controller that no finished wait has seen durable
        yet (every turn's together)."""
        return self._appended - self._covered

    async def catch_up(self) -> None:
        """Wait until everything appended so far is durable. Nothing is taken from the
        observers' share, so a cancel here loses nothing: the next delivery shows it."""
        await self.durable_through(self._appended)

    async def durable_through(self, mark: int) -> None:
        """Wait until the first ``mark`` events appended are durable (a turn's iterator, a
        producer past the backlog, an async observer's worker before it hands an event over).

        Group commit: one wait for the ledger is under way at a time, covering everything
        appended when it began; whoever needs more meanwhile waits for it, then starts the next
        (a thousand turns waiting make one flush and one wake-up from the writer, not a
        thousand)."""
        while self._covered < mark:
            running = self._flushing
            if running is not None:
                await running.wait()
                continue
            self._flushing = done = anyio.Event()
            reach = self._appended
            try:
                await self._durable()
                self._covered = max(self._covered, reach)
            finally:
                self._flushing = None
                done.set()

    async def flush(self) -> None:
        """Make everything recorded durable as far as the store can (its fsync included)."""
        mark = self._appended
        if self._covered < mark or self._flush is not self._durable:
            await self._flush()
            self._covered = max(self._covered, mark)


def _is_async(impl: Any) -> bool:
    return inspect.iscoroutinefunction(impl.function)


def _observer_name(impl: Any) -> str:
    """The name it was registered under; an unnamed object (pluggy names it by its repr) by its
    class and identity, so two of one class stay apart."""
    name = str(impl.plugin_name)
    if name.startswith("<") or len(name) > 64:
        return f"{type(impl.plugin).__name__}@{id(impl.plugin):x}"
    return name
