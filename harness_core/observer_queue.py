"""Async observers that never brake a turn: each is fed through its own bounded queue.

An ``on_event`` implementation written ``async def`` may do I/O (post to a webhook, write to a
database). The turn never awaits it, nor the ledger's commit for it: each event is put on the
observer's queue as it is recorded, without waiting, and a worker task of the controller waits
until the ledger made the event durable (one commit covers whatever is queued by then), then
awaits the observer, for one event after another, in order.
When the queue is full the observer is reported once as slow (by name, on stderr) and the
events that do not fit are counted as dropped for it (``dropped``; reported again when the
controller closes), so a slow observer costs itself events, never the turn time. Synchronous
observers are called as before, in delivery.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup
from harness_hookspecs import Event

#: Events an async observer may be behind by before the ones beyond are dropped for it.
DEFAULT_OBSERVER_QUEUE = 10_000
#: Seconds a closing controller lets async observers catch up before their workers stop.
CLOSE_GRACE = 5.0


class AsyncObserver:
    """One async observer, its bounded queue and its worker (a task of ``spawn()``)."""

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        bound: int,
        spawn: Callable[[], TaskGroup | None],
        *,
        durable: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        """``durable(mark)``: returns once the first ``mark`` events recorded are durable
        (:meth:`~.delivery.Delivery.durable_through`); none: handed over as put."""
        if bound < 1:
            raise ValueError("an observer queue holds at least one event")
        self.name = name
        self.function = function
        self.bound = bound
        self._spawn = spawn
        self._durable = durable
        self._send, self._receive = anyio.create_memory_object_stream[tuple[Event, int]](bound)
        self._idle: anyio.Event | None = None
        self._running = False
        self.queued = 0  # put and not yet handled
        self.delivered = 0
        self.dropped = 0
        self.failures = 0
        self.undurable = 0  # not shown: the ledger failed to make them durable
        self.reported_slow = False
        self.closed = False

    def put(self, event: Event, mark: int = 0) -> None:
        """Queue ``event`` without waiting (handed over once the first ``mark`` events recorded
        are durable); a full queue (or no running controller) drops it."""
        if self.closed:  # the controller is closing: not slowness, and reported already
            self.dropped += 1
            return
        if not self._running:
            group = self._spawn()
            if group is None:
                self._drop()
                return
            self._running = True
            group.start_soon(self._work)
        try:
            self._send.send_nowait((event, mark))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._drop()
            return
        self.queued += 1

    def _drop(self) -> None:
        self.dropped += 1
        if not self.reported_slow:
            self.reported_slow = True
            print(
                f"harness: the on_event observer {self.name} is slow (its queue of "
                f"{self.bound} is full); events beyond it are dropped for it",
                file=sys.stderr,
            )

    async def _work(self) -> None:
        try:
            async with self._receive:
                async for event, mark in self._receive:
                    if await self._made_durable(mark):
                        await self._hand_over(event)
                    self.queued -= 1
                    if self.queued == 0 and self._idle is not None:
                        self._idle.set()
        finally:
            self._running = False

    async def _made_durable(self, mark: int) -> bool:
        """Whether the event may be shown: the ledger made it durable (a failed commit costs
        the turn, which reports it; the observer is never shown what could be lost)."""
        if self._durable is None:
            return True
        try:
            await self._durable(mark)
        except Exception:
            self.undurable += 1
            return False
        return True

    async def _hand_over(self, event: Event) -> None:
        try:
            await self.function(event=event)
        except Exception:
            self.failures += 1
            if self.failures == 1:
                print(
                    f"harness: the on_event observer {self.name} failed; continuing",
                    file=sys.stderr,
                )
        self.delivered += 1

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every queued event was handled (``False`` when ``timeout`` ran out)."""
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            while self.queued > 0:
                self._idle = anyio.Event()
                if self.queued > 0:
                    await self._idle.wait()
            return True
        return False

    def close(self) -> None:
        """No more events; what is queued and not handled when the worker stops is dropped."""
        self.closed = True
        self._send.close()

    def report(self) -> None:
        """On close: what the observer lost, if anything."""
        lost = self.dropped + self.undurable + self.queued
        if lost:
            unsafe = f", {self.undurable} the ledger did not make durable" if self.undurable else ""
            print(
                f"harness: the on_event observer {self.name} missed {lost} events "
                f"({self.dropped} dropped by its full queue{unsafe}, {self.queued} left at close)",
                file=sys.stderr,
            )


__all__ = ["CLOSE_GRACE", "DEFAULT_OBSERVER_QUEUE", "AsyncObserver"]
