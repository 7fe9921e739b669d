"""One turn: the pulled event stream and the guarantees it keeps.

A :class:`Turn` advances the adapter's iterator one step at a time inside a cancel scope entered
and left within that step, so cancel and deadlines are structured (anyio) without a background
task per turn; it records every payload through its controller and ends with exactly one
terminal event, after which it releases what the turn held (processes, the active slot).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
from attrs import define, field, frozen
from harness_hookspecs import (
    ADAPTER_TYPES,
    TERMINAL_TYPES,
    Event,
    HarnessDescriptor,
    HarnessError,
    LedgerStore,
    MessageCompleted,
    MessageDelta,
    Payload,
    SandboxHandle,
    SessionRef,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
)
from harness_hookspecs.events import PAYLOAD_TYPES

from .context import RuntimeSessionContext
from .ledger import flush_async
from .lineage import Lineage
from .turn_protocol import StructuredTurn

CLEANUP_GRACE = 0.25


class TurnOwner(Protocol):
    """What a :class:`Turn` needs from the controller that started it (a protocol, so this
    module does not import the controller that imports it)."""

    ledger: LedgerStore

    @property
    def hook(self) -> Any:
        """The plugins' hook relay (a structured-output retry starts a new attempt with it)."""

    def _emit(self, live: LiveSession, turn_id: str | None, payload: Payload) -> Event: ...


def as_error(error: BaseException) -> HarnessError:
    if isinstance(error, HarnessError):
        return error
    if isinstance(error, ValueError | TypeError):
        return HarnessError("invalid-request")
    return HarnessError("provider-failed")


@frozen
class TurnResult:
    """What :meth:`Controller.run_turn` returns once the turn has ended."""

    session: SessionRef
    turn_id: str
    status: str  # completed | failed | cancelled
    events: tuple[Event, ...]
    text: str | None = None
    usage: Usage | None = None
    reason: str | None = None
    #: the schema-valid decision of a turn run with an output schema (``turn.completed.output``)
    output: Any = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@define
class LiveSession:
    ref: SessionRef
    descriptor: HarnessDescriptor
    context: RuntimeSessionContext
    sandbox: SandboxHandle
    prefix: str
    next_sequence: int = 1
    active: Turn | None = None
    outcome: str = "success"
    closed: bool = False
    lineage: Lineage = field(factory=Lineage)


class Turn:
    """One running turn; iterate it for events. Obtained from :meth:`Controller.turn`."""

    def __init__(
        self,
        controller: TurnOwner,
        live: LiveSession,
        turn_id: str,
        iterator: AsyncIterator[Payload],
        deadline: float | None,
        max_events: int | None,
    ) -> None:
        self.controller = controller
        self.session = live.ref
        self.turn_id = turn_id
        self._live = live
        self._iterator = iterator
        self._deadline = deadline
        self._max_events = max_events
        self._pending: deque[Event] = deque()
        self._scope: anyio.CancelScope | None = None
        self._scope_type: type[anyio.CancelScope] | None = None
        # A flag, not an anyio.Lock: acquiring a lock is a checkpoint on every event.
        self._stepping = False
        self._idle: anyio.Event | None = None
        self._cancel_by: str | None = None
        self._adapter_events = 0
        self._carry = ""  # streamed text held back while it could be the start of a secret
        self.terminal: Event | None = None
        self.events: list[Event] = []
        #: the turn's output schema and attempts (``run_turn(..., output_schema=...)``)
        self.structured: StructuredTurn | None = None

    @property
    def finished(self) -> bool:
        return self.terminal is not None

    def __aiter__(self) -> Turn:
        return self

    async def __anext__(self) -> Event:
        if not self._pending:
            if self.terminal is not None:
                raise StopAsyncIteration
            if self._stepping:
                raise HarnessError("turn-active", "the turn is already being iterated")
            # A step may record nothing (text held back for redaction): step until it does.
            # (_guarded_step inlined: one coroutine less per event on the hot path.)
            self._stepping = True
            try:
                while not self._pending and self.terminal is None:
                    await self._step()
            finally:
                self._stepping = False
                if self._idle is not None:
                    self._idle.set()
                    self._idle = None
        if not self._pending:
            raise StopAsyncIteration
        return self._pending.popleft()

    async def _guarded_step(self) -> None:
        self._stepping = True
        try:
            await self._step()
        finally:
            self._stepping = False
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    async def settle(self) -> None:
        """Wait for a step running in another task, then step once more if not finished."""
        while self._stepping:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
        if self.terminal is None:
            await self._guarded_step()

    def _record(self, payload: Payload) -> Event:
        event = self.controller._emit(self._live, self.turn_id, payload)
        self.events.append(event)
        self._pending.append(event)
        return event

    async def _step(self) -> None:
        if self.terminal is not None:
            return
        if self._cancel_by is not None:
            await self._finish(TurnCancelled(by=self._cancel_by))
            return
        payload: Any = None
        failure: HarnessError | None = None
        # The backend's scope class, built directly: anyio.CancelScope() dispatches through
        # the backend lookup on every call (~1 us of the per-event cost).
        scope_type = self._scope_type
        if scope_type is None:
            scope_type = self._scope_type = type(anyio.CancelScope())
        deadline = self._deadline
        with scope_type() if deadline is None else scope_type(deadline=deadline) as scope:
            self._scope = scope
            try:
                payload = await self._iterator.__anext__()
            except StopAsyncIteration:
                failure = HarnessError(
                    "provider-failed", "the stream ended without a terminal event"
                )
            except Exception as error:
                failure = as_error(error)
        self._scope = None
        if scope.cancel_called:
            if self._cancel_by is not None:
                await self._finish(TurnCancelled(by=self._cancel_by))
            else:
                await self._finish(TurnFailed(reason="timeout"))
            return
        if failure is not None:
            await self._finish(TurnFailed(reason=failure.reason, hint=failure.hint))
            return
        if type(payload) not in _PAYLOAD_CLASSES or payload.TYPE not in ADAPTER_TYPES:
            await self._finish(TurnFailed(reason="provider-failed", hint="non-canonical event"))
            return
        if payload.TYPE in TERMINAL_TYPES:
            if self.structured is not None:
                # None: the answer was malformed and a retry is running in this turn.
                payload = await self.structured.settle(self, payload)
                if payload is None:
                    return
            await self._finish(payload)
            return
        self._adapter_events += 1
        if self._max_events is not None and self._adapter_events > self._max_events:
            await self._finish(TurnFailed(reason="limit-exceeded", hint="too many events"))
            return
        if self._live.context.redactor.has_secrets:
            self._record_holding_back(payload)
        else:
            self._record(payload)

    def _record_holding_back(self, payload: Payload) -> None:
        """Record, holding back the tail of streamed text that could start a secret."""
        if isinstance(payload, MessageDelta):
            text = self._carry + payload.text
            keep = self._live.context.redactor.partial_suffix(text)
            self._carry = text[len(text) - keep :]
            if len(text) > keep:
                self._record(MessageDelta(text=text[: len(text) - keep]))
            return
        self._release_carry()
        self._record(payload)

    def _release_carry(self) -> None:
        if self._carry:
            carry, self._carry = self._carry, ""
            self._record(MessageDelta(text=carry))

    async def _finish(self, terminal: Payload) -> None:
        """Emit the one terminal event, then release everything the turn held."""
        if self.terminal is not None:
            return
        self._release_carry()
        self.terminal = self._record(terminal)
        live = self._live
        live.outcome = {
            TurnCompleted.TYPE: "success",
            TurnFailed.TYPE: "failure",
            TurnCancelled.TYPE: "cancelled",
        }[terminal.TYPE]
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(5):
                try:
                    aclose = getattr(self._iterator, "aclose", None)
                    if aclose is not None:
                        await aclose()
                except BaseException:
                    pass
            await live.context.kill_processes("turn", CLEANUP_GRACE)
            live.context.deadline = None
            if live.active is self:
                live.active = None
            await flush_async(self.controller.ledger)

    async def cancel(self, by: str = "host") -> None:
        """Request cancellation; the iterator then yields ``turn.cancelled``."""
        if self.terminal is not None:
            return
        self._cancel_by = by
        if self._scope is not None:
            self._scope.cancel()

    async def drain(self) -> None:
        async for _ in self:
            pass

    def result(self) -> TurnResult:
        text_parts: list[str] = []
        completed_text: str | None = None
        usage: Usage | None = None
        for event in self.events:
            payload = event.payload
            if isinstance(payload, MessageDelta):
                text_parts.append(payload.text)
            elif isinstance(payload, MessageCompleted) and payload.role == "assistant":
                completed_text = payload.text
            elif isinstance(payload, UsageReported):
                usage = payload.usage
            elif isinstance(payload, TurnCompleted) and payload.text is not None:
                completed_text = payload.text
        terminal = self.terminal
        status = {
            TurnCompleted.TYPE: "completed",
            TurnFailed.TYPE: "failed",
            TurnCancelled.TYPE: "cancelled",
        }.get(terminal.type if terminal else "", "incomplete")
        return TurnResult(
            session=self.session,
            turn_id=self.turn_id,
            status=status,
            events=tuple(self.events),
            text=completed_text if completed_text is not None else ("".join(text_parts) or None),
            usage=usage,
            reason=terminal.payload.reason
            if terminal is not None and isinstance(terminal.payload, TurnFailed)
            else None,
            output=terminal.payload.output
            if terminal is not None and isinstance(terminal.payload, TurnCompleted)
            else None,
        )


_PAYLOAD_CLASSES = frozenset(PAYLOAD_TYPES.values())


class NotStarted:
    def __aiter__(self) -> NotStarted:
        return self

    async def __anext__(self) -> Payload:
        raise HarnessError("provider-failed", "the turn did not start")
