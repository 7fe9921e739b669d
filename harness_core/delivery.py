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
from anyio.lowlevel import checkpoint
from harness_hookspecs import CommitsOnAppend, Event, LedgerStore

from .ledger import _nothing, durable_waiter, flusher
from .observer_queue import CLOSE_GRACE, DEFAULT_OBSERVER_QUEUE, AsyncObserver

#: Events a producer let go by the ledger's pace is expected to record: a commit that frees
#: room for N events lets N // PACED_SHARE waiting producers go (at least one), not all of them.
PACED_SHARE = 256


class _Waiter:
    """One task waiting in :meth:`Delivery.durable_through` or :meth:`Delivery.make_room`."""

    __slots__ = ("drive", "event", "gone", "share")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.drive = False  # woken to run the next wait for the ledger, not because covered
        self.gone = False  # cancelled while waiting: skipped when waking
        self.share = 1  # a producer let go: the events it may record before it asks again


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
        self._reach = 0  # how many appended events the wait under way covers
        #: set when the wait for the ledger under way ends (None: none is under way)
        self._running_done: anyio.Event | None = None
        #: those needing the wait after it: one is woken to run it, the others when it ends
        self._next_runner: _Waiter | None = None
        self._next_done: anyio.Event | None = None
        #: producers waiting for room under max_backlog, in the order they came
        self._paced: deque[_Waiter] = deque()

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

    async def durable_through(self, mark: int) -> None:
        """Wait until the first ``mark`` events appended are durable (a turn's iterator, an
        async observer's worker before it hands an event over).

        Group commit: one wait for the ledger is under way at a time, covering everything
        appended when it began, run by one of the tasks that need it; the others sleep until
        a wait covers their mark and are woken once (a thousand turns waiting make one flush
        and one wake-up each, not a thousand flushes). Those needing more than the wait
        under way covers share the next one; the first of them is woken to run it."""
        while self._covered < mark:
            running = self._running_done
            if running is None:
                await self._run_wait()
            elif mark <= self._reach:  # the wait under way covers it
                await running.wait()
            elif self._next_runner is None:  # runs the next one
                waiter = self._next_runner = _Waiter()
                await self._sleep(waiter)
                if self._covered >= mark:
                    self._wake_next()  # covered meanwhile (a full flush): hand it on
            else:
                if self._next_done is None:
                    self._next_done = anyio.Event()
                await self._next_done.wait()

    async def make_room(self) -> int:
        """The ledger's pace (:attr:`max_backlog`): a producer whose harness is to be asked
        for more while the backlog is full waits here, in line with the others, until a
        commit makes room. A commit lets go as many as the room it made is for, first come
        first, each with a share of it (at most :data:`PACED_SHARE` events). Returns how many
        events the producer may record before it asks again (at least one). When nobody
        records any more, everyone goes."""
        bound = self.max_backlog
        if bound is None:
            return 1
        while self.backlog >= bound:
            if self._running_done is None:
                await self._run_wait()
                continue
            waiter = _Waiter()
            self._paced.append(waiter)
            try:
                await waiter.event.wait()
                if waiter.drive:
                    await self._keep_committing()
            except BaseException:
                waiter.gone = True
                if waiter.event.is_set():  # let go, perhaps to run the next wait: pass it on
                    self._wake_next()
                raise
            return waiter.share
        return 1

    async def _keep_committing(self) -> None:
        """Run by the producer let go first when no other task will run the next wait for the
        ledger: while producers wait for room, commits must go on (and let them go)."""
        if self._running_done is None and not self.backlog:
            await checkpoint()  # the others let go record first: the commit covers them
        if self._running_done is not None:
            return
        if self.backlog:
            await self._run_wait()  # its end lets the next ones go
        else:  # nobody records: nothing to commit, no reason to hold anyone
            paced = self._paced
            while paced:
                paced.popleft().event.set()

    async def _sleep(self, waiter: _Waiter) -> None:
        """The next wait's runner until it is woken (to run it, or covered by another)."""
        try:
            await waiter.event.wait()
        except BaseException:
            if self._next_runner is waiter:
                self._next_runner = None  # those needing the next wait: woken when it is due
            elif waiter.event.is_set():  # woken to run the next wait: pass that on
                self._wake_next()
            raise

    async def _run_wait(self) -> None:
        """One wait for the ledger, covering what was appended when it began; then wake who
        it covers and hand the next wait on."""
        self._reach = reach = self._appended
        # it covers those who were waiting for the next one, their runner too
        done = self._running_done = self._next_done or anyio.Event()
        runner, self._next_done, self._next_runner = self._next_runner, None, None
        try:
            await self._durable()
            self._covered = max(self._covered, reach)
        finally:
            self._running_done = None
            done.set()
            if runner is not None:
                runner.event.set()
            self._wake_next()

    def _wake_next(self) -> None:
        """After a wait for the ledger (or a waiter leaving): wake the one to run the next
        wait (or, if it left, all who need it: one of them runs it), and the producers there
        is room for."""
        if self._running_done is not None:
            return  # the running wait wakes them when it ends
        running = False
        runner = self._next_runner
        if runner is not None:
            self._next_runner = None
            runner.drive = running = True
            runner.event.set()
        elif self._next_done is not None:
            done, self._next_done = self._next_done, None
            running = True
            done.set()
        paced = self._paced
        while paced and paced[0].gone:
            paced.popleft()
        if not paced:
            return
        room = (self.max_backlog or 0) - self.backlog
        if room > 0:
            let_go = max(1, room // PACED_SHARE)
            share = max(1, min(PACED_SHARE, room // let_go))
        else:  # unless a wait for the ledger is coming, one of them runs the next
            let_go, share = (0, 1) if running else (1, 1)
        while paced and let_go:
            waiter = paced.popleft()
            if not waiter.gone:
                waiter.drive = not running
                waiter.share = share
                running = True
                waiter.event.set()
                let_go -= 1

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
