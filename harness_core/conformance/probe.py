"""The kit's probe: a plugin registered for one run that watches the adapter from inside.

Its ``wrapper=True`` lifecycle hooks wrap the adapter's turn stream and session calls, its
``on_event`` observer records every event the controller emits, and its credential resolver
injects a secret canary. It *quarantines* contract violations in the adapter's own stream - a
non-canonical item is recorded and withheld, an item of a payload subclass is projected to its
canonical class, an out-of-bounds payload is withheld - so one defect fails the one check that
names it instead of cascading into every check downstream. Violations it withholds are never
hidden: the check that names them fails.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any

import anyio
import attrs
from attrs import define, field
from harness_hookspecs import (
    ADAPTER_TYPES,
    TERMINAL_TYPES,
    CancelTurnRequest,
    CloseSessionRequest,
    Credential,
    CredentialRequest,
    Event,
    OpenSessionRequest,
    ResumeSessionRequest,
    RunTurnRequest,
    UsageReported,
    hookimpl,
)

from ..process_table import children
from .processes import SeenProcess
from .rules import CANONICAL, describe_item, payload_problem, usage_problem

#: A secret the kit injects as a credential (redaction must remove it everywhere).
CANARY_CREDENTIAL_VAR = "HARNESS_CONFORMANCE_SECRET"
PROBE_NAME = "harness_core.conformance"
RESOLVER_NAME = "conformance-canary"
#: After an adapter's terminal, how long the probe waits to see whether it yields more.
POST_TERMINAL_WAIT = 0.5


@define
class TurnProbe:
    turn_id: str
    context: Any
    hold: bool = False
    entered: anyio.Event = field(factory=anyio.Event)
    items: int = 0
    terminal_type: str | None = None
    ended_without_terminal: bool = False
    raised: str | None = None
    children_before: dict[int, int] = field(factory=dict)


class ProbeIterator:
    """Wraps the adapter's turn stream: records, judges and quarantines what it yields."""

    def __init__(self, probe: Probe, turn: TurnProbe, inner: AsyncIterator[Any]) -> None:
        self._probe = probe
        self._turn = turn
        self._inner = inner
        self._closed = False

    def __aiter__(self) -> ProbeIterator:
        return self

    async def __anext__(self) -> Any:
        turn = self._turn
        if turn.hold and turn.items >= 1:
            # The kit keeps this turn running (no slow prompt): wait here to be cancelled.
            turn.entered.set()
            await anyio.sleep_forever()
        while True:
            if not turn.hold:
                turn.entered.set()
            try:
                item = await self._inner.__anext__()
            except StopAsyncIteration:
                if turn.terminal_type is None:
                    turn.ended_without_terminal = True
                    self._probe.violation(
                        "one-terminal", f"{turn.turn_id}: the stream ended without a terminal"
                    )
                raise
            except Exception as error:
                turn.raised = type(error).__name__
                raise
            turn.items += 1
            passed = self._probe.judge(item, turn.turn_id)
            if passed is None:
                continue  # quarantined
            if passed.TYPE in TERMINAL_TYPES:
                if turn.terminal_type is not None:
                    self._probe.violation(
                        "one-terminal", f"{turn.turn_id}: a second terminal {passed.TYPE}"
                    )
                turn.terminal_type = passed.TYPE
            return passed

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        turn = self._turn
        if turn.terminal_type is not None:
            # A conforming adapter's stream ends at its terminal: would it yield more?
            with anyio.move_on_after(POST_TERMINAL_WAIT):
                try:
                    extra = await self._inner.__anext__()
                except StopAsyncIteration:
                    pass
                except Exception:
                    pass
                else:
                    self._probe.violation(
                        "one-terminal",
                        f"{turn.turn_id}: yielded {describe_item(extra)} after its terminal "
                        f"{turn.terminal_type}",
                    )
        try:
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._probe.turn_ended(turn)


class CanaryResolver:
    name = RESOLVER_NAME

    def __init__(self, secret: str) -> None:
        self.secret = secret

    async def resolve(self, request: CredentialRequest) -> Sequence[Credential]:
        return [
            Credential(
                env_var=CANARY_CREDENTIAL_VAR,
                value=self.secret,
                purpose="integration",
                source="conformance",
            )
        ]


class Probe:
    """The kit's plugin for one run: observer, stream probe, process tracker, canary resolver."""

    def __init__(self, secret: str) -> None:
        self.features: frozenset[str] = frozenset()
        self.secret = secret
        self.active: dict[int, str] = {}  # id(context) -> the turn running in it
        self.events: dict[str, list[Event]] = {}
        self.violations: dict[str, list[str]] = {}
        self.turns: dict[str, TurnProbe] = {}
        self.processes: list[SeenProcess] = []
        self.contexts: list[Any] = []
        self.hold_next_turn = False

    def violation(self, check: str, detail: str) -> None:
        self.violations.setdefault(check, []).append(detail)

    # -- registration and observation -----------------------------------------------------

    @hookimpl
    def register_credential_resolvers(self, register: Callable[[Any], None]) -> None:
        register(CanaryResolver(self.secret))

    @hookimpl
    def on_event(self, event: Event) -> None:
        self.events.setdefault(event.session_id, []).append(event)

    # -- lifecycle wrappers ---------------------------------------------------------------

    def _instrument(self, context: Any) -> None:
        if getattr(context, "_conformance_probe", None) is self:
            return
        spawn = getattr(context, "spawn", None)
        if spawn is None:
            return
        probe = self

        async def recording_spawn(argv: Sequence[str], **kwargs: Any) -> Any:
            process = await spawn(argv, **kwargs)
            pid = int(process.pid)
            probe.processes.append(
                SeenProcess(
                    pid=pid,
                    pgid=pid,  # spawn starts a new session: the pid leads its group
                    session=context,
                    turn_id=probe.active.get(id(context)),
                    lifetime=str(kwargs.get("lifetime", "turn")),
                )
            )
            return process

        with contextlib.suppress(AttributeError, TypeError):
            context.spawn = recording_spawn
            context._conformance_probe = self
        self.contexts.append(context)

    def _session_call(self, context: Any, awaitable: Awaitable[Any]) -> Awaitable[Any]:
        async def call() -> Any:
            before = children()
            try:
                return await awaitable
            finally:
                self._note_children(before, context, None)

        return call()

    def turn_ended(self, turn: TurnProbe) -> None:
        if self.active.get(id(turn.context)) == turn.turn_id:
            del self.active[id(turn.context)]
        self._note_children(turn.children_before, turn.context, turn.turn_id)

    def _note_children(self, before: Mapping[int, int], context: Any, turn_id: str | None) -> None:
        known = {p.pid for p in self.processes}
        for pid, pgid in children().items():
            if pid not in before and pid not in known:
                self.processes.append(SeenProcess(pid, pgid, context, turn_id, "direct"))

    @hookimpl(wrapper=True)
    def harness_open_session(
        self, request: OpenSessionRequest, context: Any
    ) -> Generator[None, Any, Any]:
        self._instrument(context)
        result = yield
        return self._session_call(context, result) if result is not None else None

    @hookimpl(wrapper=True)
    def harness_resume_session(
        self, request: ResumeSessionRequest, context: Any
    ) -> Generator[None, Any, Any]:
        self._instrument(context)
        result = yield
        return self._session_call(context, result) if result is not None else None

    @hookimpl(wrapper=True)
    def harness_run_turn(self, request: RunTurnRequest, context: Any) -> Generator[None, Any, Any]:
        self._instrument(context)
        turn = TurnProbe(turn_id=request.turn_id, context=context, hold=self.hold_next_turn)
        turn.children_before = children()
        self.hold_next_turn = False
        self.turns[request.turn_id] = turn
        self.active[id(context)] = request.turn_id
        result = yield
        if result is None or not hasattr(result, "__anext__"):
            return result
        return ProbeIterator(self, turn, result)

    @hookimpl(wrapper=True)
    def harness_cancel_turn(
        self, request: CancelTurnRequest, context: Any
    ) -> Generator[None, Any, Any]:
        result = yield
        return None if result is None else self._noting_raise("cancel", "cancel_turn", result)

    @hookimpl(wrapper=True)
    def harness_close_session(
        self, request: CloseSessionRequest, context: Any
    ) -> Generator[None, Any, Any]:
        result = yield
        return None if result is None else self._noting_raise("close", "close_session", result)

    def _noting_raise(self, check: str, method: str, awaitable: Awaitable[Any]) -> Awaitable[None]:
        """Await the adapter's call; if it raises, the check fails (and the caller still sees it)."""

        async def call() -> None:
            try:
                await awaitable
            except Exception as error:
                self.violation(check, f"the adapter's {method} raised {type(error).__name__}")
                raise

        return call()

    # -- judging one item of the adapter's stream -----------------------------------------

    def judge(self, item: Any, turn_id: str) -> Any:
        """Return the item to pass on (possibly projected), or ``None`` to withhold it."""
        cls = type(item)
        if cls not in CANONICAL:
            base = next((c for c in CANONICAL if isinstance(item, c)), None)
            if base is None:
                self.violation(
                    "canonical-types", f"{turn_id}: yielded a non-canonical {describe_item(item)}"
                )
                return None
            extra = (
                sorted({a.name for a in attrs.fields(cls)} - {a.name for a in attrs.fields(base)})
                if attrs.has(cls)
                else []
            )
            self.violation(
                "raw-fields",
                f"{turn_id}: a {base.TYPE} subclass {cls.__name__} carries extra fields "
                f"{', '.join(extra) or '(non-attrs attributes)'}",
            )
            try:
                item = base(**{a.name: getattr(item, a.name) for a in attrs.fields(base)})
            except (TypeError, ValueError, AttributeError):
                return None
        if item.TYPE not in ADAPTER_TYPES:
            self.violation(
                "canonical-types", f"{turn_id}: yielded {item.TYPE!r}, which only the runtime emits"
            )
            return None
        if isinstance(item, UsageReported):
            problem = usage_problem(item.usage)
            if problem is not None:
                self.violation("usage", f"{turn_id}: {problem}")
                return None
            if "usage" not in self.features:
                self.violation(
                    "usage", f"{turn_id}: emitted usage but the descriptor does not claim usage"
                )
        problem = payload_problem(item)
        if problem is not None:
            self.violation("field-bounds", f"{turn_id}: {item.TYPE}: {problem}")
            return None
        return item
