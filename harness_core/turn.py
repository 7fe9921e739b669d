"""One turn: its event stream and the guarantees it keeps.

A :class:`Turn`'s producer task drives the adapter's iterator inside one cancel scope (cancel
and the deadline are structured, anyio), records every payload through its controller and ends
with exactly one terminal event, after which it releases what the turn held (processes, the
active slot); iterating the turn hands the events out once the ledger made them durable.
``run_turn`` may instead drive the same loop in the caller's own task (:meth:`Turn.run_inline`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
from anyio.lowlevel import checkpoint
from attrs import define, field, frozen
from harness_hookspecs import (
    ADAPTER_TYPES,
    RUNTIME_REASONS,
    TERMINAL_TYPES,
    Event,
    HarnessDescriptor,
    HarnessError,
    LedgerStore,
    MessageCompleted,
    MessageDelta,
    Payload,
    RunTurnRequest,
    SandboxHandle,
    SessionRef,
    ThinkingCompleted,
    ThinkingDelta,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
)
from harness_hookspecs.events import PAYLOAD_TYPES
from harness_hookspecs.values import Value

from .budgets import SessionLimits, add_usage
from .context import RuntimeSessionContext
from .delivery import Delivery
from .diagnostics import harness_raised
from .hook_calls import HookCalls
from .pricing import priced
from .recorder import SessionRecorder

if TYPE_CHECKING:  # imported by a turn that has an output schema (turn_start)
    from .structured_output import StructuredTurn

CLEANUP_GRACE = 0.25
#: Events recorded and not yet handed to the iterator, at most (then the producer waits).
PENDING_MAX = 4096
#: A stream that ended without its terminal event (a frozen value: one serves every turn).
_ENDED_EARLY = TurnFailed(
    reason="provider-failed", hint="the stream ended without a terminal event"
)
#: Events an adapter may still yield once its turn is cancelled or past its deadline (its last
#: text, its usage, its terminal); past this it ignores the cancel (a function that swallows
#: it and goes on streaming) and the turn ends without it.
AFTER_CANCEL_MAX = 100


class TurnOwner(Protocol):
    """What a :class:`Turn` needs from the controller that started it (a protocol, so this
    module does not import the controller that imports it)."""

    ledger: LedgerStore
    delivery: Delivery
    #: where the session logs go (:mod:`.diagnostics`)
    log_directory: Path
    #: lifecycle hooks, by the fast path (see :class:`~harness_core.hook_calls.HookCalls`)
    call: HookCalls
    task_group: anyio.abc.TaskGroup | None
    #: the running backend's Event and CancelScope classes (``anyio.Event()`` looks the
    #: backend up on every call; the class taken once is ~0.7 us cheaper per object)
    event_class: Callable[[], anyio.Event]
    scope_class: Callable[..., anyio.CancelScope]
    #: ``anyio.current_time`` and ``anyio.get_cancelled_exc_class()``, looked up once
    clock: Callable[[], float]
    cancelled_class: type[BaseException] | None


def as_error(error: BaseException) -> HarnessError:
    if isinstance(error, HarnessError):
        return error
    if isinstance(error, ValueError | TypeError):
        return HarnessError("invalid-request")
    return HarnessError("provider-failed")


def harness_failure(error: BaseException) -> HarnessError:
    """What a harness's own exception means for its turn (the request was already valid).

    A ``ValueError`` there is the harness's fault (often an invalid event), not a bad request; a
    ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` raised by the
    harness) ends the turn like any other failure instead of taking the runtime down.
    """
    if isinstance(error, HarnessError):
        return error
    for known in (ValueError, TypeError, SystemExit, KeyboardInterrupt, GeneratorExit):
        if isinstance(error, known):  # the class name only: never the exception's text
            return HarnessError("provider-failed", f"the harness raised {known.__name__}")
    return HarnessError("provider-failed")


def believed(payload: Payload, cancel_requested: str | None) -> Payload:
    """A harness's terminal as the runtime records it: who cancelled and which limit or deadline
    fired are the runtime's to say, never taken from the harness's output."""
    if isinstance(payload, TurnCancelled):
        by = cancel_requested or "harness"
        return payload if payload.by == by else TurnCancelled(by=by)
    if isinstance(payload, TurnFailed) and payload.reason in RUNTIME_REASONS:
        return TurnFailed(reason="provider-failed", hint="the harness claimed a runtime reason")
    return payload


@frozen(repr=False, eq=False)
class TurnResult(Value):
    """What :meth:`Controller.run_turn` returns once the turn has ended."""

    #: the session the turn ran in
    session: SessionRef
    turn_id: str
    #: ``completed``, ``failed`` or ``cancelled``: the type of the turn's one terminal event
    status: str
    #: every event of the turn as delivered, ``turn.started`` first, the terminal last
    events: tuple[Event, ...]
    #: the final answer (``turn.completed.text``; ``None`` for a failed or cancelled turn)
    text: str | None = None
    #: the sum of the turn's usage reports (``None``: none reported, unknown)
    usage: Usage | None = None
    #: the fixed reason of a failed turn (``turn.failed.reason``, one of the contract's
    #: ``REASONS``); ``None`` otherwise
    reason: str | None = None
    #: the session's running total after this turn (every turn's usage, resumed ones too)
    session_usage: Usage | None = None
    #: the schema-valid decision of a turn run with an output schema (``turn.completed.output``)
    output: Any = None

    @property
    def ok(self) -> bool:
        """Whether the turn completed."""
        return self.status == "completed"


@define
class LiveSession:
    ref: SessionRef
    descriptor: HarnessDescriptor
    context: RuntimeSessionContext
    sandbox: SandboxHandle
    #: the session's one write path: every event of it is recorded there
    recorder: SessionRecorder
    active: Turn | None = None
    outcome: str = "success"
    closed: bool = False
    limits: SessionLimits = field(factory=SessionLimits)
    #: the turn a dead process left open that this resume keeps for its retry (:mod:`.retry`)
    retrying: str | None = None
    #: thinking text reaches the ledger (``False``: only ``thinking.completed``'s count does)
    record_thinking: bool = True
    #: the host's instructions still to be put before the next prompt (a harness without the
    #: ``instructions`` feature gets them so, once: with the session's first turn)
    instructions_pending: str | None = None
    #: a child session's parent, while both are open here (delegation, :mod:`.delegation`)
    parent: LiveSession | None = None
    #: how many parents up to a top-level session (0: top-level)
    depth: int = 0
    #: the ids of the child sessions this session opened, in order
    children: list[str] = field(factory=list)
    #: every turn id the session has recorded (``None``: not known here; the ledger is read)
    turn_ids: set[str] | None = None


class Turn:
    """One running turn; iterate it for events. Obtained from :meth:`Controller.turn`.

    A producer task (in the controller's task group) drives the adapter inside one cancel scope
    (cancel and the deadline interrupt it) and records each event; iterating the turn hands the
    events out in order, each only once the ledger has made it durable. While the iterator waits
    for one commit the producer keeps recording, so the next commit takes everything that
    arrived meanwhile (group commit). At most :data:`PENDING_MAX` events wait undelivered.
    """

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
        #: the session the turn runs in, and its recorder (every event of the turn goes there)
        self.live = live
        self.recorder = live.recorder
        self._iterator = iterator
        self._deadline = deadline
        self._max_events = max_events
        self._pending: deque[Event] = deque()
        self._scope: anyio.CancelScope | None = None
        self._started = False
        self._new_event = controller.event_class
        self._new_scope = controller.scope_class
        self._ended = False  # the producer (or inline driver) has ended: terminal, cleanup done
        self._done: anyio.Event | None = None  # made when someone waits for the end
        #: run_turn's driver: the caller's task drives the adapter and gets each event at once
        self._inline = False
        self._on_event: Callable[[Event], Any] | None = None
        self._caller_error: BaseException | None = None
        self._ready: anyio.Event | None = None  # the iterator waits for an event
        self._room: anyio.Event | None = None  # the producer waits for the iterator
        self._pulled: anyio.Event | None = None  # the producer holds a terminal until pulled
        self._timed_out = False
        self._iterating = False
        self._delivered = 0  # events handed out (index of the pending head in self.events)
        self._durable = 0  # events known durable (a flush covering them returned)
        self._mark = 0  # the controller's count of appended events at this turn's latest
        self._error: BaseException | None = None
        self._cancel_by: str | None = None
        #: who asked for a cancel the harness may answer itself (before the runtime cancels)
        self.cancel_requested: str | None = None
        self._adapter_events = 0
        #: set when the deadline is the session's wall-clock budget (then limit-exceeded)
        self.limit_hint: str | None = None
        #: the shared budget spent outside the turn's stream (:meth:`stop_over_budget`)
        self._spent: str | None = None
        self._carry = ""  # streamed text held back while it could be the start of a secret
        self._thinking_carry = ""  # the same, for streamed thinking
        self.terminal: Event | None = None
        self.events: list[Event] = []
        #: the turn's output schema and attempts (``run_turn(..., output_schema=...)``)
        self.structured: StructuredTurn | None = None
        #: run once the terminal is recorded and the turn's processes are gone, before the
        #: session is free (the workspace checkpoint after the turn, :mod:`.branching`)
        self.after_end: Callable[[], Awaitable[None]] | None = None

    @property
    def finished(self) -> bool:
        return self.terminal is not None

    def __aiter__(self) -> Turn:
        return self

    async def __anext__(self) -> Event:
        if self._iterating or self._inline:  # run_turn hands this turn's events out itself
            raise HarnessError("turn-active", "the turn is already being iterated")
        self._iterating = True
        try:
            pending = self._pending
            while not pending:
                if self._error is not None:
                    error, self._error = self._error, None
                    raise error
                if self.terminal is not None and (self._ended or not self._started):
                    raise StopAsyncIteration
                self._ready = self._new_event()
                if self._pulled is not None:
                    self._pulled.set()
                    self._pulled = None
                await self._ready.wait()
            event = pending[0]
            if event is self.terminal and self._started and not self._ended:
                # The turn's processes are gone before its end is seen; the producer flushed.
                await self.settle()
            if self._delivered >= self._durable:
                # Durable before delivered: nobody sees an event the ledger could still lose.
                if not self._ended and not self.controller.delivery.instant:
                    # Let the producer record what its adapter has ready first: the commit we
                    # wait for then covers it too (a short turn: one commit less).
                    await checkpoint()
                covered = len(self.events)
                await self.recorder.deliver(seen=True, through=self._mark)
                self._durable = covered
            pending.popleft()
            self._delivered += 1
            if self._room is not None and len(pending) <= PENDING_MAX // 2:
                self._room.set()
                self._room = None
            return event
        finally:
            self._iterating = False

    def start(self) -> None:
        """Start the producer (once the adapter's iterator is in place)."""
        group = self.controller.task_group
        if group is None:
            raise HarnessError("invalid-request", "use the Controller with `async with`")
        self._started = True
        group.start_soon(self._produce)

    async def begin(self, opening: Payload, request: RunTurnRequest, *, inline: bool) -> None:
        """Record the turn's opening event, open the adapter's stream and start the producer
        (unless ``inline``: :meth:`run_inline` drives it). A turn the adapter refuses ends here
        with ``turn.failed``."""
        self._record(opening)
        context = self.live.context
        if context.bridge is not None:
            # The run's bridge token (the session has host tools): revoked in _finish.
            context.begin_bridge_run(self.turn_id, self.record_side_event, self._deadline)
        try:
            self._open_stream(request)
            if not inline:
                self.start()
        except Exception as error:
            self.log_raised(error)
            failure = as_error(error)
            await self._finish(TurnFailed(reason=failure.reason, hint=failure.hint))

    async def next_attempt(
        self, prompt: str, retry: Payload, *, output_schema: Mapping[str, Any] | None = None
    ) -> int:
        """Start the turn's next attempt with the adapter (same turn id: one turn to everyone):
        close this attempt's stream, stop its processes, release held-back text, record
        ``retry`` (a child of ``turn.started``) and open the new stream. Returns how many
        events the turn holds before the new attempt's first. Raises when the adapter gives
        no stream (the caller then ends the turn)."""
        live = self.live
        with anyio.CancelScope(shield=True):
            aclose = getattr(self._iterator, "aclose", None)
            if aclose is not None:
                with anyio.move_on_after(5):
                    try:
                        await aclose()
                    except Exception:
                        pass
            await live.context.kill_processes("turn", CLEANUP_GRACE)
        self._release_carry()
        self.recorder.lineage.expect(self.events[0].event_id if self.events else None)
        self._record(retry)
        before = len(self.events)
        self._open_stream(
            RunTurnRequest(
                session=live.ref, turn_id=self.turn_id, prompt=prompt, output_schema=output_schema
            )
        )
        return before

    def _open_stream(self, request: RunTurnRequest) -> None:
        """The adapter's event stream for ``request``: the one route, for every attempt."""
        iterator = self.controller.call(
            "harness_run_turn", request=request, context=self.live.context
        )
        if iterator is None or not hasattr(iterator, "__anext__"):
            raise HarnessError("provider-failed", "the adapter returned no event stream")
        self._iterator = iterator

    @property
    def settled(self) -> bool:
        """The producer has ended (or never started)."""
        return not self._started or self._ended

    async def settle(self) -> None:
        """Wait until the producer has ended (the terminal recorded, the turn's processes gone)."""
        if not self.settled:
            if self._done is None:
                self._done = self._new_event()
            await self._done.wait()

    def _end(self) -> None:
        self._ended = True
        if self._done is not None:
            self._done.set()
        if self._ready is not None:
            self._ready.set()
            self._ready = None

    async def run_inline(self, on_event: Callable[[Event], Any] | None) -> None:
        """Drive the turn to its end in the caller's task (``run_turn``): no producer task, no
        hand-offs. Each event goes to ``on_event`` (and the observers) as soon as it is
        recorded, so the controller uses this only when that needs no commit wait (a store that
        commits on append, or nobody to see events before the turn's final flush); the terminal
        comes after the turn's processes are gone and the flush, as from the iterator."""
        self._started = self._inline = True
        self._on_event = on_event
        try:
            if self.terminal is None:
                await self._finish(await self._run_adapter())
            await self._hand_out()
        except BaseException as error:
            # As the producer does, but in the caller's task: a cancel (or on_event raising:
            # the host leaves the turn) ends it cancelled and goes on; a failure is recorded.
            stopped = error is self._caller_error or isinstance(
                error, anyio.get_cancelled_exc_class()
            )
            failure = await self._end_by(error, stopped, "host")
            if stopped:
                raise
            if failure is not None:
                raise failure from None  # the caller must know what the ledger may lack
            await self._hand_out()
        finally:
            self._end()

    async def _hand_out(self) -> None:
        """Inline: what was recorded goes to the observers and the caller now."""
        delivery = self.controller.delivery
        if delivery.instant and delivery.observed:
            await self.recorder.deliver()
        self._give_out()

    def _give_out(self) -> None:
        """Inline: the recorded events to ``on_event`` (if any), in order."""
        pending, on_event = self._pending, self._on_event
        if on_event is None:
            self._delivered += len(pending)
            pending.clear()
            return
        while pending:
            event = pending.popleft()
            self._delivered += 1
            if on_event is not None:
                try:
                    on_event(event)
                except BaseException as error:
                    self._caller_error = error
                    raise

    def log_raised(self, error: BaseException) -> None:
        """What the harness raised, with its traceback, to the session's diagnostic log (the
        turn's record keeps the fixed reason only)."""
        live = self.live
        harness_raised(
            error,
            directory=self.controller.log_directory,
            session_id=live.ref.session_id,
            harness=live.ref.harness,
            turn_id=self.turn_id,
            redact=live.context.redactor.text,
        )

    def record_side_event(self, payload: Payload) -> bool:
        """Record an event from outside the adapter's stream (the MCP bridge's tool calls) in
        this turn, in sequence; False once the terminal event is recorded."""
        if self.terminal is not None or type(payload) not in _PAYLOAD_CLASSES:
            return False
        self._release_carry()
        self._record(payload)
        return True

    def _record(self, payload: Payload) -> Event:
        event = self.recorder.record(self.turn_id, payload)
        self._mark = self.controller.delivery.appended  # what the iterator waits durable for
        self.events.append(event)
        self._pending.append(event)
        if self._ready is not None:
            self._ready.set()
            self._ready = None
        return event

    async def _produce(self) -> None:
        try:
            terminal = await self._run_adapter()
            if terminal.TYPE != TurnCancelled.TYPE and not self._timed_out:
                terminal = await self._when_pulled(terminal)
            await self._finish(terminal)
        except BaseException as error:
            # Never into the controller's task group: the iterator raises it instead.
            stopped = isinstance(error, anyio.get_cancelled_exc_class())
            failure = await self._end_by(error, stopped, "close")
            if stopped:
                raise
            if failure is not None:
                self._error = failure  # the caller must know what the ledger may lack
        finally:
            self._end()

    async def _end_by(self, error: BaseException, stopped: bool, by: str) -> HarnessError | None:
        """Record the terminal ``error`` means for a turn it interrupted (shielded): a cancel
        (``stopped``) ``turn.cancelled`` (by whoever cancelled, else ``by``), anything else
        ``turn.failed``. Returns the failure its driver must raise: none was recorded, or the
        ledger failed."""
        failure: BaseException = error
        with anyio.CancelScope(shield=True):
            if self.terminal is None:
                try:
                    await self._finish(
                        TurnCancelled(by=self._cancel_by or by)
                        if stopped
                        else TurnFailed(reason=as_error(error).reason)
                    )
                except BaseException as late:  # the ledger failed too
                    failure = late
        if stopped:
            return None
        failure = failure if isinstance(failure, HarnessError) else as_error(failure)
        if self.terminal is None or failure.reason == "ledger-failed":
            return failure
        return None

    async def _when_pulled(self, terminal: Payload) -> Payload:
        """Hold the terminal until the iterator has taken everything before it and asks for
        more: a caller that leaves early still cancels the turn, as when nothing ran ahead.
        Only a cancel ends the wait (not the deadline: the harness finished in time)."""
        with self._new_scope() as scope:
            self._scope = scope
            if self._cancel_by is not None:
                scope.cancel()
            while self._pending or self._ready is None:
                self._pulled = self._new_event()
                await self._pulled.wait()
        self._scope = None
        if scope.cancel_called and self._cancel_by is not None:
            return TurnCancelled(by=self._cancel_by)
        return terminal

    async def _run_adapter(self) -> Payload:
        """Drive the adapter until its terminal (or a failure, cancel, deadline, limit)."""
        cancelled = self.controller.cancelled_class or anyio.get_cancelled_exc_class()
        iterator = self._iterator
        pending = self._pending
        redactor = self.live.context.redactor
        delivery = self.controller.delivery
        outcome: Payload | None = None
        deadline = self._deadline
        after_cancel = 0
        backlog = None if delivery.instant else delivery.max_backlog
        share = 0  # events the ledger's pace let this producer record before it asks again
        with self._new_scope() if deadline is None else self._new_scope(deadline=deadline) as scope:
            self._scope = scope
            if self._cancel_by is not None:
                scope.cancel()
            while outcome is None:
                if pending:
                    if self._inline:
                        if delivery.observed:  # observers first (when the store is instant)
                            await self._hand_out()
                        else:
                            self._give_out()  # no coroutine per event for nobody to see
                    elif len(pending) >= PENDING_MAX:
                        self._room = self._new_event()
                        await self._room.wait()
                if share:
                    share -= 1
                elif backlog is not None and delivery.backlog >= backlog:  # the ledger's pace
                    share = await delivery.make_room() - 1
                try:
                    payload = await iterator.__anext__()
                except StopAsyncIteration:
                    outcome = _ENDED_EARLY
                    break
                except cancelled:
                    raise
                except BaseException as error:  # a harness raising SystemExit: its failure
                    self.log_raised(error)
                    failure = harness_failure(error)
                    outcome = TurnFailed(reason=failure.reason, hint=failure.hint)
                    break
                if scope.cancel_called:
                    after_cancel += 1
                    if after_cancel > AFTER_CANCEL_MAX:
                        break  # it ignores the cancel: the turn ends as cancelled or timed out
                if type(payload) not in _PAYLOAD_CLASSES or payload.TYPE not in ADAPTER_TYPES:
                    outcome = TurnFailed(reason="provider-failed", hint="non-canonical event")
                elif payload.TYPE in TERMINAL_TYPES:
                    outcome = believed(payload, self._cancel_by or self.cancel_requested)
                    if self.structured is not None:
                        # None: the answer was malformed and a retry now runs in this turn.
                        outcome = await self.structured.decide(self, outcome)
                        iterator = self._iterator
                else:
                    if type(payload) is ThinkingDelta or type(payload) is ThinkingCompleted:
                        thought = self._thinking(payload)
                        if thought is None:
                            continue  # thinking kept out of the ledger: only the count stays
                        payload = thought
                    if type(payload) is UsageReported and payload.usage.cost_usd is None:
                        # tokens without cost: estimated from a price table (on a thread: the
                        # table's first import takes a second or two)
                        live = self.live
                        payload = await anyio.to_thread.run_sync(
                            priced, payload, live.context.model, live.descriptor.vendor
                        )
                    self._adapter_events += 1
                    if self._max_events is not None and self._adapter_events > self._max_events:
                        outcome = TurnFailed(reason="limit-exceeded", hint="too many events")
                    elif redactor.has_secrets:
                        self._record_holding_back(payload)
                    else:
                        self._record(payload)
                    if outcome is None and type(payload) is UsageReported:
                        crossed = self.live.limits.add(payload.usage, self.controller.clock())
                        if crossed is not None:  # the budget is spent: end the turn here
                            outcome = TurnFailed(reason="limit-exceeded", hint=crossed)
        self._scope = None
        return self._ending(outcome, deadline, scope)

    def _ending(
        self, outcome: Payload | None, deadline: float | None, scope: anyio.CancelScope
    ) -> Payload:
        """The turn's end once the adapter loop is left: a cancelled scope is the cancel, the
        budget's limit or the deadline; a deadline that passed while the harness held the loop
        still wins over its late answer, and so does a budget spent outside the turn."""
        if self._spent is not None and self._cancel_by is None:
            return TurnFailed(reason="limit-exceeded", hint=self._spent)
        if (
            outcome is not None
            and deadline is not None
            and self._cancel_by is None
            and self.controller.clock() >= deadline
        ):
            # The deadline passed while the harness held the loop (a function that blocks has
            # no checkpoint for the scope to interrupt): its late answer is still a timeout.
            outcome = None
            scope.cancel()
        if scope.cancel_called and outcome is None:
            if self._cancel_by is not None:
                return TurnCancelled(by=self._cancel_by)
            self._timed_out = True
            if self.limit_hint is not None:
                return TurnFailed(reason="limit-exceeded", hint=self.limit_hint)
            return TurnFailed(reason="timeout")
        assert outcome is not None
        return outcome

    def _thinking(self, payload: ThinkingDelta | ThinkingCompleted) -> Payload | None:
        """A thinking event as the session records it: its length counted on
        ``thinking.completed``; in a session that keeps thinking out of the ledger, the deltas
        dropped (``None``) and the completed block's text too."""
        if isinstance(payload, ThinkingDelta):
            return payload if self.live.record_thinking else None
        text = payload.text
        characters = len(text) if text is not None else payload.characters
        if not self.live.record_thinking:
            text = None
        return ThinkingCompleted(text=text, characters=characters)

    def _record_holding_back(self, payload: Payload) -> None:
        """Record, holding back the tail of streamed text that could start a secret."""
        if isinstance(payload, MessageDelta):
            self._carry = self._held(self._carry + payload.text, MessageDelta)
            return
        if isinstance(payload, ThinkingDelta):
            self._thinking_carry = self._held(self._thinking_carry + payload.text, ThinkingDelta)
            return
        if self._thinking_carry and isinstance(payload, ThinkingCompleted):
            # the block's deltas are all in before the block is
            carry, self._thinking_carry = self._thinking_carry, ""
            self._record(ThinkingDelta(text=carry))
        # The carry stays held across other events (a secret split by a status line between
        # its pieces); it is released before the terminal.
        self._record(payload)

    def _held(self, text: str, piece: type[MessageDelta] | type[ThinkingDelta]) -> str:
        """Record streamed ``text`` as a ``piece`` less its tail that could start a secret;
        returns that tail (held until the next piece arrives)."""
        keep = self.live.context.redactor.hold_back(text)
        if len(text) > keep:
            self._record(piece(text=text[: len(text) - keep]))
        return text[len(text) - keep :]

    def record_runtime(self, payload: Payload) -> None:
        """Record a payload the runtime authors inside the running turn (the approval seam's
        ``permission.requested``/``permission.resolved``); dropped once the turn has ended."""
        if self.terminal is None:
            self._release_carry()
            self._record(payload)

    def _release_carry(self) -> None:
        if self._thinking_carry:
            carry, self._thinking_carry = self._thinking_carry, ""
            self._record(ThinkingDelta(text=carry))
        if self._carry:
            carry, self._carry = self._carry, ""
            self._record(MessageDelta(text=carry))

    async def _finish(self, terminal: Payload) -> None:
        """Emit the one terminal event, then release everything the turn held."""
        if self.terminal is not None:
            return
        # Revoked first: no bridged call can record an event after the terminal one.
        self.live.context.end_bridge_run(self.turn_id)
        self._release_carry()
        self.terminal = self._record(terminal)
        live = self.live
        live.outcome = _OUTCOMES[terminal.TYPE]
        aclose = getattr(self._iterator, "aclose", None)
        # An async generator that ran to its end (ag_frame None) has nothing to close.
        if aclose is not None and getattr(self._iterator, "ag_frame", True) is None:
            aclose = None
        context = live.context
        if (
            aclose is None
            and self.after_end is None
            and self.controller.delivery.free_flush
            and not context.has_processes
        ):
            # Nothing below can wait, so nothing can cancel it: no shield scope needed.
            self._let_go()
            self._durable = len(self.events)  # the store's commit is its append
            return
        with self._new_scope(shield=True):
            if aclose is not None:
                with anyio.move_on_after(5):
                    try:
                        await aclose()
                    except BaseException:
                        pass
            await context.kill_processes(
                "turn", CLEANUP_GRACE, stopped=terminal.TYPE != TurnCompleted.TYPE
            )
            if self.after_end is not None:
                await self.after_end()
            self._let_go()
            covered = len(self.events)
            await self.recorder.flush()
            self._durable = covered  # the terminal's delivery needs no flush of its own

    def _let_go(self) -> None:
        """The session is free for its next turn."""
        live = self.live
        live.context.deadline = None
        if live.context.recorder == self.record_runtime:
            live.context.turn_id, live.context.recorder = None, None
        if live.active is self:
            live.active = None

    async def cancel(self, by: str = "host") -> None:
        """Request cancellation; the iterator then yields ``turn.cancelled``."""
        if self.terminal is not None:
            return
        self._cancel_by = by
        if self._scope is not None:
            self._scope.cancel()
        elif not self._started:  # nothing drives the adapter: end the turn here
            with anyio.CancelScope(shield=True):
                await self._finish(TurnCancelled(by=by))

    def stop_over_budget(self, hint: str) -> None:
        """End the turn ``turn.failed(limit-exceeded)`` (``hint`` names the limit): a budget it
        shares was spent outside its own stream (a child session's usage, :mod:`.delegation`)."""
        if self.terminal is not None or self._cancel_by is not None:
            return
        self._spent = hint
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
                usage = add_usage(usage, payload.usage)
            elif isinstance(payload, TurnCompleted) and payload.text is not None:
                completed_text = payload.text
        terminal = self.terminal
        status = _STATUSES.get(terminal.type if terminal else "", "incomplete")
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
            session_usage=self.live.limits.usage,
            output=terminal.payload.output
            if terminal is not None and isinstance(terminal.payload, TurnCompleted)
            else None,
        )


_PAYLOAD_CLASSES = frozenset(PAYLOAD_TYPES.values())
#: a terminal's type -> the sandbox outcome, and the turn's status
_OUTCOMES = {
    TurnCompleted.TYPE: "success",
    TurnFailed.TYPE: "failure",
    TurnCancelled.TYPE: "cancelled",
}
_STATUSES = {
    TurnCompleted.TYPE: "completed",
    TurnFailed.TYPE: "failed",
    TurnCancelled.TYPE: "cancelled",
}


def end_interrupted(live: LiveSession, turn_id: str) -> None:
    """End turn ``turn_id``, which a dead process left open, as ``turn.failed(interrupted)``."""
    live.recorder.record(turn_id, TurnFailed(reason="interrupted"))


def end_unretried(live: LiveSession, turn_id: str | None = None) -> None:
    """A turn kept open for a retry that did not come (another turn ``turn_id``, a close) ends
    now (see :mod:`.retry`)."""
    if live.retrying not in (None, turn_id):
        end_interrupted(live, live.retrying)
    live.retrying = None


class NotStarted:
    def __aiter__(self) -> NotStarted:
        return self

    async def __anext__(self) -> Payload:
        raise HarnessError("provider-failed", "the turn did not start")
