"""What ``harness serve`` holds: one controller, the task group its turns run in, and a hub
that wakes event followers.

Turns run in the server's task group, not in the request that started them: a client that
disconnects from a turn's event stream does not cancel the turn (``POST .../cancel`` does), and
every follower reads the same events back from the ledger, which stays the one source of truth.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
from attrs import Factory, define, field
from harness_hookspecs import Event, HarnessError, SessionRecord, SessionRef, UsageReported

from ..approvals import PendingApprovals
from ..controller import Controller
from ..record_close import close_from_anywhere
from ..turn import Turn
from .limits import DEFAULT_MAX_BODY, DEFAULT_READ_TIMEOUT

#: How long a follower sleeps when nothing woke it (events written by another process).
POLL_SECONDS = 0.5


class Hub:
    """Wakes the followers of a session when this server records events for it."""

    def __init__(self) -> None:
        self._waiters: dict[str, anyio.Event] = {}
        #: the server is shutting down: followers end their streams (:meth:`close`)
        self.closing = False

    def waiter(self, session_id: str) -> anyio.Event:
        """Take the waiter *before* reading, so an event recorded meanwhile is not missed."""
        event = self._waiters.get(session_id)
        if event is None:
            event = self._waiters[session_id] = anyio.Event()
            if self.closing:
                event.set()
        return event

    def close(self) -> None:
        """The server is shutting down: wake every follower, so each ends its stream at once
        (a stream still open when the server stops is cancelled with a traceback)."""
        self.closing = True
        waiters, self._waiters = self._waiters, {}
        for event in waiters.values():
            event.set()

    def notify(self, session_id: str) -> None:
        event = self._waiters.pop(session_id, None)
        if event is not None:
            event.set()


@define
class SharedRead:
    """One read of a session's events that every follower woken together shares."""

    done: anyio.Event = field(factory=anyio.Event)
    #: what the ledger gave (``None`` while reading, or when the read failed or was cancelled)
    events: list[Event] | None = None
    #: the events' server-sent-event frames, encoded once for every follower (:mod:`.sse`)
    frames: list[str] | None = None


class SharedReads:
    """Followers of a session are woken together (the :class:`Hub`) and then ask for the same
    events at once: one ledger read - and one encoding - serves all of them (100 followers
    were 100 reads, each in a worker thread, per wake-up).

    A follower joins a read only when it holds the same hub waiter as the follower that
    started it: no event was recorded here between that read's start and the join (a
    notification replaces the waiter), so what the read returns is what the joiner's own read
    would have; an event recorded during the read sets the shared waiter and everyone reads
    again."""

    def __init__(self, read: Callable[[str, int, int], Awaitable[list[Event]]]) -> None:
        #: the ledger read shared: (session id, after, limit) -> the events
        self._read = read
        self._reads: dict[tuple[str, int, int, anyio.Event], SharedRead] = {}

    async def events(
        self, session_id: str, after: int, limit: int, waiter: anyio.Event
    ) -> SharedRead:
        key = (session_id, after, limit, waiter)
        read = self._reads.get(key)
        if read is not None:
            await read.done.wait()
            if read.events is not None:
                return read
            # the read that was shared failed or its follower left: read alone
            return SharedRead(events=await self._read(session_id, after, limit))
        read = self._reads[key] = SharedRead()
        try:
            read.events = await self._read(session_id, after, limit)
            return read
        finally:
            del self._reads[key]
            read.done.set()


@define
class Summary:
    """A session's totals for the list view, kept up to date from the events read so far."""

    last_sequence: int = 0
    turns: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    last_turn: str | None = None  # status of the last turn: running/completed/failed/cancelled
    updated_at: str | None = None

    def add(self, event: Event) -> None:
        if event.sequence <= self.last_sequence:
            return  # two requests read the same new events concurrently: count them once
        self.last_sequence = event.sequence
        self.updated_at = event.timestamp
        if event.type == "turn.started":
            self.turns += 1
            self.last_turn = "running"
        elif event.terminal:
            self.last_turn = event.type.split(".", 1)[1]
        elif isinstance(event.payload, UsageReported):
            usage = event.payload.usage
            self.input_tokens = _plus(self.input_tokens, usage.input_tokens)
            self.output_tokens = _plus(self.output_tokens, usage.output_tokens)
            self.cost_usd = _plus(self.cost_usd, usage.cost_usd)


def _plus(total: Any, value: Any) -> Any:
    # None means unknown: a sum stays unknown until something is reported.
    if value is None:
        return total
    return value if total is None else total + value


@define
class Server:
    """The state one ``harness serve`` process shares between its routes."""

    controller: Controller
    task_group: anyio.abc.TaskGroup
    token: str
    hub: Hub = field(factory=Hub)
    #: the permission requests waiting for an answer from the approve endpoint
    approvals: PendingApprovals | None = None
    summaries: dict[str, Summary] = field(factory=dict)
    #: followers' reads of the same events at the same moment, shared (:mod:`.sse`)
    shared_reads: SharedReads = field(
        default=Factory(lambda server: SharedReads(server.events), takes_self=True)
    )
    #: the largest request body read, in bytes (``harness serve --max-body``); 413 past it
    max_body: int = DEFAULT_MAX_BODY
    #: seconds a request's body may take to arrive (``--read-timeout``); 408 past them
    read_timeout: float = DEFAULT_READ_TIMEOUT

    @property
    def ledger(self) -> Any:
        return self.controller.ledger

    async def read(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call a ledger read off the event loop (a SQLite read flushes pending writes first)."""
        return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))

    async def events(self, session_id: str, after: int, limit: int | None = None) -> list[Event]:
        found: list[Event] = await self.read(
            self.ledger.events, session_id, after=after, limit=limit
        )
        return found

    async def record(self, session_id: str) -> SessionRecord:
        record: SessionRecord | None = await self.read(self.ledger.get_session, session_id)
        if record is None:
            raise HarnessError("session-not-found")
        return record

    async def summary(self, session_id: str) -> Summary:
        summary = self.summaries.setdefault(session_id, Summary())
        for event in await self.events(session_id, after=summary.last_sequence):
            summary.add(event)
        return summary

    def running_turn(self, session_id: str) -> Turn | None:
        try:
            return self.controller.active_turn(session_id)
        except HarnessError:
            return None  # not live in this process (closed, or opened elsewhere)

    # -- changes -----------------------------------------------------------------------------

    async def attach(self, session_id: str) -> SessionRef:
        """The live ref of a session, resuming it when it was opened by another process."""
        ref: SessionRef = await self.controller.resume_session(session_id)
        self.hub.notify(session_id)
        return ref

    async def start_turn(self, session_id: str, prompt: str, timeout: float | None) -> Turn:
        """Start a turn in the server's task group; return it once ``turn.started`` is recorded."""
        ref = await self.attach(session_id)

        async def run(*, task_status: anyio.abc.TaskStatus[Turn]) -> None:
            started = False
            try:
                async with self.controller.turn(ref, prompt, timeout=timeout) as turn:
                    task_status.started(turn)
                    started = True
                    self.hub.notify(session_id)
                    async for _ in turn:
                        self.hub.notify(session_id)
            except Exception:
                if not started:
                    raise  # reaches the request that asked for the turn
                # The controller turns adapter failures into terminal events; anything left is
                # a bug below it, which must not take the server (and every other turn) down.
                print("harness serve: a turn task failed", file=sys.stderr)
            finally:
                self.hub.notify(session_id)

        turn: Turn = await self.task_group.start(run)
        return turn

    async def cancel(self, session_id: str, turn_id: str | None) -> None:
        try:
            await self.controller.cancel_turn(session_id, turn_id)
        except HarnessError as error:
            if error.reason != "session-not-found":
                raise
            await self.record(session_id)  # unknown session: session-not-found
            # Known, but not live in this server (e.g. a `harness run` elsewhere).
            raise HarnessError(
                "turn-not-found", "no turn of this session runs in this server"
            ) from None
        self.hub.notify(session_id)

    async def close(self, session_id: str) -> None:
        record = await self.record(session_id)
        if record.status != "closed":
            await close_from_anywhere(self.controller, session_id)
        self.hub.notify(session_id)
