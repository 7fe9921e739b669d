"""The conformance kit: drive one harness through the whole contract and judge every event.

``run_conformance("echo")`` (or an adapter object, or an ``@harness`` function) opens sessions in
a temporary workspace on a real SQLite ledger, runs two turns in one session, cancels a running
turn, resumes the session from its :class:`SessionRef` in a *new* controller, closes it (twice),
exports it, and then judges what it saw. Each check passes or fails; nothing is skipped - a check
the kit could not exercise fails with ``not exercised: <why>`` (no false PASS).

How it sees the adapter: the kit registers a probe plugin for the run. Its ``wrapper=True``
lifecycle hooks wrap the adapter's turn stream and session calls, an ``on_event`` observer records
every event the controller emits, and a credential resolver injects a secret canary. The probe
*quarantines* contract violations in the adapter's own stream - a non-canonical item is recorded
and withheld, an item of a payload subclass is projected to its canonical class, an out-of-bounds
payload is withheld - so one defect fails the one check that names it (and the report) instead of
cascading into every check downstream. Violations the probe withholds are never hidden: the
report fails.

Use ``harness conformance NAME [--json]`` on the command line, or the pytest plugin
(``pytest --harness-conformance NAME``, the ``harness_conformance`` fixture, or
``harness_core.pytest_plugin.conformance_tests``) in a plugin's own test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import attrs
from attrs import define, field, frozen
from harness_hookspecs import (
    ADAPTER_TYPES,
    EVENT_TYPES,
    FEATURES,
    PAYLOAD_TYPES,
    PROTOCOL_VERSION,
    TERMINAL_TYPES,
    CancelTurnRequest,
    CloseSessionRequest,
    Credential,
    CredentialRequest,
    Event,
    HarnessDescriptor,
    HarnessError,
    LedgerStore,
    MessageDelta,
    OpenSessionRequest,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionRef,
    Usage,
    UsageReported,
    hookimpl,
)
from harness_hookspecs._bounds import (
    MAX_SAFE_INTEGER,
    SESSION_ID_MAX,
    TURN_ID_MAX,
    has_control,
    is_name,
)
from harness_hookspecs.specs.conformance import ConformanceProfile

from .controller import Controller
from .plugins import Plugins, as_adapter, plugins_from

__all__ = [
    "CANARY_CREDENTIAL_VAR",
    "CANARY_ENV_VAR",
    "CHECKS",
    "CheckResult",
    "ConformanceProfile",
    "ConformanceReport",
    "arun_conformance",
    "cli_main",
    "run_conformance",
]

#: A secret the kit injects as a credential (redaction must remove it everywhere).
CANARY_CREDENTIAL_VAR = "HARNESS_CONFORMANCE_SECRET"
#: A secret the kit places in the host environment only (nothing may copy it into a record).
CANARY_ENV_VAR = "HARNESS_CONFORMANCE_CANARY"
PROBE_NAME = "harness_core.conformance"
RESOLVER_NAME = "conformance-canary"

#: Every check, in report order, with what it establishes.
CHECKS: tuple[tuple[str, str], ...] = (
    ("descriptor", "the descriptor is valid, stable and speaks this protocol version"),
    ("turns-completed", "open -> turn -> completed: every ordinary turn ends turn.completed"),
    ("envelope", "every event carries a complete, well-formed envelope"),
    ("sequence", "sequence is session-wide, gap-free and delivered in order"),
    ("event-ids", "event ids are unique across all sessions"),
    ("one-terminal", "exactly one terminal event per turn, and it is the last"),
    ("canonical-types", "only canonical event types, and only those an adapter may yield"),
    ("field-bounds", "every payload field is within its bounds and survives serialization"),
    ("raw-fields", "extra provider fields are projected out"),
    ("resume", "resume from the SessionRef in a new controller (or unsupported-feature)"),
    ("cancel", "targeted cancel reaches the caller as turn.cancelled; no turn process survives"),
    ("close", "close is idempotent, a closed session refuses turns, no process survives"),
    ("usage", "usage, when emitted, is claimed and non-negative integers"),
    ("ledger-round-trip", "the ledger read back from disk equals the events streamed"),
    ("export", "the export bundle is strict JSON and complete"),
    ("canary", "an injected secret and a host-environment secret appear in no record"),
)
CHECK_NAMES: tuple[str, ...] = tuple(name for name, _ in CHECKS)
_DESCRIPTIONS = dict(CHECKS)

_SESSION_TYPES = frozenset({"session.opened", "session.resumed", "session.closed"})
_CANONICAL = {cls: event_type for event_type, cls in PAYLOAD_TYPES.items()}
_ENVELOPE_KEYS = frozenset(
    {
        "protocol_version",
        "event_id",
        "sequence",
        "session_id",
        "turn_id",
        "harness",
        "timestamp",
        "parent_event_id",
        "type",
        "payload",
    }
)
#: After an adapter's terminal, how long the probe waits to see whether it yields more.
POST_TERMINAL_WAIT = 0.5
#: How long a cancel may take to reach the caller, and processes to disappear.
CANCEL_WAIT = 10.0
PROCESS_WAIT = 3.0


# -- the report ---------------------------------------------------------------------------------


@frozen
class CheckResult:
    name: str
    passed: bool
    detail: str

    @property
    def description(self) -> str:
        return _DESCRIPTIONS.get(self.name, "")


@frozen
class ConformanceReport:
    harness: str
    checks: tuple[CheckResult, ...]
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    @property
    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "passed": self.passed,
            "duration_s": round(self.duration, 3),
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail} for c in self.checks
            ],
        }

    def format_table(self) -> str:
        width = max((len(c.name) for c in self.checks), default=5)
        lines = [f"harness conformance: {self.harness}"]
        for check in self.checks:
            mark = "PASS" if check.passed else "FAIL"
            lines.append(f"  {mark}  {check.name:<{width}}  {check.detail}")
        failed = len(self.failed)
        lines.append(
            f"{len(self.checks)} checks: {len(self.checks) - failed} passed, {failed} failed"
            f" ({self.duration:.1f}s)"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()


# -- what the probe records ---------------------------------------------------------------------


@define
class _Proc:
    pid: int
    pgid: int
    session: Any  # the SessionContext it was started under (its session_id is read late)
    turn_id: str | None
    lifetime: str  # "turn" | "session" | "direct"


@define
class _TurnProbe:
    turn_id: str
    context: Any
    hold: bool = False
    entered: anyio.Event = field(factory=anyio.Event)
    items: int = 0
    terminal_type: str | None = None
    ended_without_terminal: bool = False
    raised: str | None = None
    children_before: dict[int, int] = field(factory=dict)


def _describe_item(item: Any) -> str:
    event_type = getattr(type(item), "TYPE", None)
    return repr(event_type) if isinstance(event_type, str) else type(item).__name__


class _ProbeIterator:
    """Wraps the adapter's turn stream: records, judges and quarantines what it yields."""

    def __init__(self, probe: _Probe, turn: _TurnProbe, inner: AsyncIterator[Any]) -> None:
        self._probe = probe
        self._turn = turn
        self._inner = inner
        self._closed = False

    def __aiter__(self) -> _ProbeIterator:
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
                        f"{turn.turn_id}: yielded {_describe_item(extra)} after its terminal "
                        f"{turn.terminal_type}",
                    )
        try:
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            self._probe.turn_ended(turn)


class _CanaryResolver:
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


class _Probe:
    """The kit's plugin for one run: observer, stream probe, process tracker, canary resolver."""

    def __init__(self, secret: str) -> None:
        self.features: frozenset[str] = frozenset()
        self.secret = secret
        self.active: dict[int, str] = {}  # id(context) -> the turn running in it
        self.events: dict[str, list[Event]] = {}
        self.violations: dict[str, list[str]] = {}
        self.turns: dict[str, _TurnProbe] = {}
        self.processes: list[_Proc] = []
        self.contexts: list[Any] = []
        self.hold_next_turn = False

    def violation(self, check: str, detail: str) -> None:
        self.violations.setdefault(check, []).append(detail)

    # -- registration and observation -----------------------------------------------------

    @hookimpl
    def register_credential_resolvers(self, register: Callable[[Any], None]) -> None:
        register(_CanaryResolver(self.secret))

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
                _Proc(
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
            before = _children()
            try:
                return await awaitable
            finally:
                self._note_children(before, context, None)

        return call()

    def turn_ended(self, turn: _TurnProbe) -> None:
        if self.active.get(id(turn.context)) == turn.turn_id:
            del self.active[id(turn.context)]
        self._note_children(turn.children_before, turn.context, turn.turn_id)

    def _note_children(self, before: Mapping[int, int], context: Any, turn_id: str | None) -> None:
        known = {p.pid for p in self.processes}
        for pid, pgid in _children().items():
            if pid not in before and pid not in known:
                self.processes.append(_Proc(pid, pgid, context, turn_id, "direct"))

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
        turn = _TurnProbe(turn_id=request.turn_id, context=context, hold=self.hold_next_turn)
        turn.children_before = _children()
        self.hold_next_turn = False
        self.turns[request.turn_id] = turn
        self.active[id(context)] = request.turn_id
        result = yield
        if result is None or not hasattr(result, "__anext__"):
            return result
        return _ProbeIterator(self, turn, result)

    @hookimpl(wrapper=True)
    def harness_cancel_turn(
        self, request: CancelTurnRequest, context: Any
    ) -> Generator[None, Any, Any]:
        result = yield
        if result is None:
            return None

        async def call() -> None:
            try:
                await result
            except Exception as error:
                self.violation("cancel", f"the adapter's cancel_turn raised {type(error).__name__}")
                raise

        return call()

    @hookimpl(wrapper=True)
    def harness_close_session(
        self, request: CloseSessionRequest, context: Any
    ) -> Generator[None, Any, Any]:
        result = yield
        if result is None:
            return None

        async def call() -> None:
            try:
                await result
            except Exception as error:
                self.violation(
                    "close", f"the adapter's close_session raised {type(error).__name__}"
                )
                raise

        return call()

    # -- judging one item of the adapter's stream -----------------------------------------

    def judge(self, item: Any, turn_id: str) -> Any:
        """Return the item to pass on (possibly projected), or ``None`` to withhold it."""
        cls = type(item)
        if cls not in _CANONICAL:
            base = next((c for c in _CANONICAL if isinstance(item, c)), None)
            if base is None:
                self.violation(
                    "canonical-types", f"{turn_id}: yielded a non-canonical {_describe_item(item)}"
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
            problem = _usage_problem(item.usage)
            if problem is not None:
                self.violation("usage", f"{turn_id}: {problem}")
                return None
            if "usage" not in self.features:
                self.violation(
                    "usage", f"{turn_id}: emitted usage but the descriptor does not claim usage"
                )
        problem = _payload_problem(item)
        if problem is not None:
            self.violation("field-bounds", f"{turn_id}: {item.TYPE}: {problem}")
            return None
        return item


def _payload_problem(payload: Any) -> str | None:
    """Why a canonical payload is out of bounds or does not survive serialization, or None."""
    from .serialize import converter, payload_to_dict

    try:
        attrs.validate(payload)
    except (TypeError, ValueError) as error:
        return _clip(str(error).splitlines()[0] if str(error) else type(error).__name__)
    try:
        data = payload_to_dict(payload)
        text = json.dumps(data, allow_nan=False)
        again = converter.structure(json.loads(text), type(payload))
    except Exception as error:
        return f"does not serialize ({type(error).__name__})"
    if payload_to_dict(again) != data:
        return "changes when serialized and read back (a field has the wrong type)"
    return None


def _usage_problem(usage: Any) -> str | None:
    if type(usage) is not Usage:
        return f"usage is a {type(usage).__name__}, not Usage"
    for attribute in attrs.fields(Usage):
        value = getattr(usage, attribute.name)
        if value is None:
            continue
        if attribute.name == "cost_usd":
            if isinstance(value, bool) or not isinstance(value, int | float):
                return "cost_usd is not a number"
            if not (0 <= value < math.inf):
                return "cost_usd is negative or not finite"
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{attribute.name} is not an integer ({type(value).__name__})"
        if not 0 <= value <= MAX_SAFE_INTEGER:
            return f"{attribute.name} is negative or beyond the safe integer range"
    return None


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- processes ----------------------------------------------------------------------------------


def _children() -> dict[int, int]:
    """This process's live children: pid -> process group (empty without /proc)."""
    me = os.getpid()
    found: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[1]) == me:
            found[int(entry)] = int(fields[2])
    return found


def _survivors(processes: Sequence[_Proc], timeout: float) -> list[int]:
    """Wait up to ``timeout`` for the processes (and their groups) to go; return who is left."""
    from .testing.processes import alive, group_members

    own_group = os.getpgid(0)
    deadline = time.monotonic() + timeout
    while True:
        left: set[int] = set()
        for proc in processes:
            if proc.pgid != own_group:
                left.update(group_members(proc.pgid))
            elif alive(proc.pid):
                left.add(proc.pid)
        if not left or time.monotonic() > deadline:
            return sorted(left)
        time.sleep(0.02)


def _kill_leftovers(processes: Sequence[_Proc]) -> None:
    """SIGKILL whatever the run recorded that is still there, and reap it (bounded)."""
    import signal

    from .testing.processes import alive

    own_group = os.getpgid(0)
    for proc in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if proc.pgid != own_group:
                os.killpg(proc.pgid, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    pending = list(processes)
    while pending and time.monotonic() < deadline:
        for proc in list(pending):
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, os.WNOHANG)
            if not alive(proc.pid):
                pending.remove(proc)
        if pending:
            time.sleep(0.01)


# -- the run ------------------------------------------------------------------------------------


@define
class _Turn:
    label: str
    session_id: str
    turn_id: str | None = None
    seen: list[Event] = field(factory=list)
    error: str | None = None

    @property
    def terminal(self) -> Event | None:
        return next((e for e in reversed(self.seen) if e.type in TERMINAL_TYPES), None)


@define
class _Run:
    name: str
    plugins: Plugins
    profile: ConformanceProfile
    workspace: str
    root: Path
    ledger: str | LedgerStore
    timeout: float
    factory: Callable[..., Controller]
    probe: _Probe
    env_secret: str
    descriptor: HarnessDescriptor | None = None
    descriptor_error: str | None = None
    descriptor_problems: list[str] = field(factory=list)
    main: SessionRef | None = None
    open_error: str | None = None
    ordinary: list[_Turn] = field(factory=list)
    cancel_turn: _Turn | None = None
    cancel_notes: list[str] = field(factory=list)
    cancel_problems: list[str] = field(factory=list)
    cancel_not_run: str | None = None
    resume_problems: list[str] = field(factory=list)
    resume_note: str = ""
    resume_not_run: str | None = None
    close_problems: list[str] = field(factory=list)
    close_note: str = ""
    close_not_run: str | None = None
    closed_session: SessionRef | None = None
    export_bundle: dict[str, Any] | None = None
    export_error: str | None = None
    export_session: str | None = None
    ledger_files_open: dict[str, bytes] = field(factory=dict)
    credential_injected: bool = False

    def controller(self) -> Controller:
        return self.factory(
            plugins=self.plugins,
            ledger=self.ledger,
            state_dir=self.root / "state",
            turn_timeout=self.profile.turn_timeout or self.timeout,
        )

    @property
    def features(self) -> frozenset[str]:
        return self.descriptor.features if self.descriptor is not None else frozenset()

    def session_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"workspace": self.workspace, "config": self.profile.config}
        if self.profile.model is not None:
            kwargs["model"] = self.profile.model
        return kwargs

    async def open(self, controller: Controller) -> SessionRef:
        with anyio.fail_after(self.timeout):
            ref = await controller.open_session(
                harness=self.name, target=self.profile.target, **self.session_kwargs()
            )
        self._note_credential()
        return ref

    def _note_credential(self) -> None:
        for context in self.probe.contexts:
            with contextlib.suppress(Exception):
                if context.env.get(CANARY_CREDENTIAL_VAR) == self.probe.secret:
                    self.credential_injected = True

    async def ordinary_turn(self, controller: Controller, ref: SessionRef, label: str) -> _Turn:
        turn = _Turn(label=label, session_id=ref.session_id)
        self.ordinary.append(turn)
        try:
            async with controller.turn(ref, self.profile.prompt) as running:
                turn.turn_id = running.turn_id
                async for event in running:
                    turn.seen.append(event)
        except HarnessError as error:
            turn.error = error.reason
        return turn

    # -- phases ---------------------------------------------------------------------------

    async def describe(self, controller: Controller) -> None:
        try:
            first = controller.describe(self.name)
            second = controller.describe(self.name)
        except HarnessError as error:
            self.descriptor_error = f"describe failed: {error.reason}"
            return
        except Exception as error:
            self.descriptor_error = f"describe raised {type(error).__name__}"
            return
        if type(first) is not HarnessDescriptor:
            self.descriptor_error = f"describe returned a {type(first).__name__}"
            return
        problems = self.descriptor_problems
        try:
            attrs.validate(first)
        except (TypeError, ValueError) as error:
            problems.append(_clip(str(error)))
        if first.provider != self.name:
            problems.append(f"provider {first.provider!r} is not the registered name {self.name!r}")
        if not is_name(first.provider):
            problems.append("provider is not a valid name")
        if first.protocol_version != PROTOCOL_VERSION:
            problems.append(
                f"protocol_version {first.protocol_version!r}, this runtime speaks {PROTOCOL_VERSION}"
            )
        unknown = sorted(set(first.features) - set(FEATURES))
        if unknown:
            problems.append(f"unknown features {unknown}")
        if self.profile.target not in first.targets:
            problems.append(f"no {self.profile.target} target (the kit drives that target)")
        if second != first:
            problems.append("describe() is not stable between calls")
        self.probe.features = frozenset(first.features)
        try:
            from .serialize import descriptor_to_dict

            json.dumps(descriptor_to_dict(first), allow_nan=False)
        except Exception as error:
            problems.append(f"the descriptor does not serialize ({type(error).__name__})")
        self.descriptor = first

    async def first_controller(self) -> None:
        async with self.controller() as controller:
            await self.describe(controller)
            if self.descriptor is None:
                return
            try:
                self.main = await self.open(controller)
            except HarnessError as error:
                self.open_error = f"open failed: {error.reason}"
                return
            except TimeoutError:
                self.open_error = f"open did not finish within {self.timeout:g}s"
                return
            await self.ordinary_turn(controller, self.main, "turn 1")
            await self.ordinary_turn(controller, self.main, "turn 2")
            await self.cancel_phase(controller)
        # Leaving the controller releases (not closes) the sessions: resume comes next.

    async def cancel_phase(self, controller: Controller) -> None:
        try:
            ref = await self.open(controller)
        except (HarnessError, TimeoutError) as error:
            self.cancel_not_run = f"the cancel session did not open ({_reason(error)})"
            return
        claimed = "cancel" in self.features
        slow = self.profile.slow_prompt if claimed else None
        prompt = slow or self.profile.prompt
        turn = _Turn(label="cancelled turn", session_id=ref.session_id)
        self.cancel_turn = turn
        done = anyio.Event()

        async def consume(running: Any) -> None:
            try:
                async for event in running:
                    turn.seen.append(event)
            finally:
                done.set()

        self.probe.hold_next_turn = claimed and slow is None
        try:
            async with controller.turn(ref, prompt) as running:
                turn.turn_id = running.turn_id
                probe_turn = self.probe.turns.get(running.turn_id)
                if not claimed:
                    await self._refused_cancel(controller, ref, running.turn_id)
                    async for event in running:
                        turn.seen.append(event)
                    return
                async with anyio.create_task_group() as tg:
                    tg.start_soon(consume, running)
                    with anyio.move_on_after(self.profile.turn_timeout or self.timeout):
                        while not done.is_set() and not (
                            probe_turn is not None and probe_turn.entered.is_set()
                        ):
                            await anyio.sleep(0.01)
                    await anyio.sleep(self.profile.cancel_after)
                    if done.is_set():
                        ended = turn.terminal.type if turn.terminal else "without a terminal"
                        self.cancel_problems.append(
                            f"the turn ended ({ended}) before it could be cancelled; give the "
                            "conformance profile a slow_prompt that keeps a turn running"
                        )
                        return
                    self.cancel_notes.append(
                        "held by the kit after the adapter's first event"
                        if slow is None
                        else "slow prompt running"
                    )
                    try:
                        await controller.cancel_turn(ref, "turn_not_the_active_one")
                        self.cancel_problems.append("cancel with a wrong turn id did not raise")
                    except HarnessError as error:
                        if error.reason != "turn-not-found":
                            self.cancel_problems.append(
                                f"cancel with a wrong turn id raised {error.reason}"
                            )
                    if done.is_set():
                        self.cancel_problems.append("a cancel with a wrong turn id ended the turn")
                        return
                    with anyio.move_on_after(CANCEL_WAIT) as scope:
                        await controller.cancel_turn(ref, running.turn_id)
                        await done.wait()
                    if scope.cancelled_caught:
                        self.cancel_problems.append(
                            f"the cancel did not reach the caller within {CANCEL_WAIT:g}s"
                        )
                        tg.cancel_scope.cancel()
        except HarnessError as error:
            self.cancel_problems.append(f"the turn did not start ({error.reason})")

    async def _refused_cancel(self, controller: Controller, ref: SessionRef, turn_id: str) -> None:
        try:
            await controller.cancel_turn(ref, turn_id)
        except HarnessError as error:
            if error.reason == "unsupported-feature":
                self.cancel_notes.append("not claimed: cancel raised unsupported-feature")
            else:
                self.cancel_problems.append(
                    f"not claimed, but cancel raised {error.reason} instead of unsupported-feature"
                )
            return
        self.cancel_problems.append("not claimed, but cancel did not raise unsupported-feature")

    async def second_controller(self) -> None:
        async with self.controller() as controller:
            target: SessionRef | None = None
            if self.main is None:
                reason = self.open_error or self.descriptor_error or "no session was opened"
                self.resume_not_run = reason
                self.close_not_run = reason
                return
            if "resume" in self.features:
                target = await self.resume_phase(controller, self.main)
            else:
                try:
                    with anyio.fail_after(self.timeout):
                        await controller.resume_session(self.main, **self.session_kwargs())
                    self.resume_problems.append(
                        "resume is not claimed, but resuming did not raise unsupported-feature"
                    )
                except HarnessError as error:
                    if error.reason == "unsupported-feature":
                        self.resume_note = "not claimed: resume raised unsupported-feature"
                    else:
                        self.resume_problems.append(
                            f"resume is not claimed; it raised {error.reason}, "
                            "not unsupported-feature"
                        )
                except TimeoutError:
                    self.resume_problems.append("resume did not answer")
            if target is None:
                try:
                    target = await self.open(controller)
                    self.close_note = "(on a new session)"
                except (HarnessError, TimeoutError) as error:
                    self.close_not_run = f"no session to close ({_reason(error)})"
            if target is not None:
                await self.close_phase(controller, target)
            self.export_session = self.main.session_id
            try:
                self.export_bundle = controller.export(self.main.session_id)
            except HarnessError as error:
                self.export_error = f"export failed: {error.reason}"
            except Exception as error:
                self.export_error = f"export raised {type(error).__name__}"
            self.ledger_files_open = self.ledger_bytes()

    async def resume_phase(self, controller: Controller, ref: SessionRef) -> SessionRef | None:
        before = len(self.probe.events.get(ref.session_id, []))
        try:
            with anyio.fail_after(self.timeout):
                resumed = await controller.resume_session(ref, **self.session_kwargs())
        except HarnessError as error:
            self.resume_problems.append(f"resume raised {error.reason}")
            return None
        except TimeoutError:
            self.resume_problems.append(f"resume did not finish within {self.timeout:g}s")
            return None
        self._note_credential()
        if resumed != ref:
            self.resume_problems.append("resume returned a different SessionRef")
        after = self.probe.events.get(ref.session_id, [])[before:]
        if [e.type for e in after] != ["session.resumed"]:
            self.resume_problems.append("resume did not emit exactly one session.resumed")
        turn = await self.ordinary_turn(controller, ref, "turn after resume")
        if turn.terminal is None:
            self.resume_problems.append(
                f"the turn after resume did not end ({turn.error or 'no terminal event'})"
            )
        else:
            self.resume_note = f"resumed in a new controller; next turn {turn.terminal.type}"
        return ref

    async def close_phase(self, controller: Controller, ref: SessionRef) -> None:
        self.closed_session = ref
        problems = self.close_problems
        for attempt in ("first", "second"):
            try:
                with anyio.fail_after(self.timeout):
                    await controller.close_session(ref)
            except HarnessError as error:
                problems.append(f"the {attempt} close raised {error.reason}")
            except TimeoutError:
                problems.append(f"the {attempt} close did not finish within {self.timeout:g}s")
        closed = [
            e for e in self.probe.events.get(ref.session_id, []) if e.type == "session.closed"
        ]
        if len(closed) != 1:
            problems.append(f"{len(closed)} session.closed events after two closes")
        try:
            async with controller.turn(ref, self.profile.prompt) as running:
                async for _ in running:
                    pass
            problems.append("a turn on the closed session was accepted")
        except HarnessError as error:
            if error.reason != "session-closed":
                problems.append(f"a turn on the closed session raised {error.reason}")
        try:
            await controller.resume_session(ref, **self.session_kwargs())
            problems.append("resuming the closed session was accepted")
        except HarnessError as error:
            if error.reason != "session-closed":
                problems.append(f"resuming the closed session raised {error.reason}")
        record = controller.ledger.get_session(ref.session_id)
        if record is None or record.status != "closed":
            problems.append("the ledger does not record the session as closed")

    # -- reading back ---------------------------------------------------------------------

    def sqlite_path(self) -> str | None:
        if isinstance(self.ledger, str) and self.ledger.startswith("sqlite:"):
            from .ledger import path_of

            return path_of(self.ledger, "sqlite")
        return None

    def ledger_bytes(self) -> dict[str, bytes]:
        path = self.sqlite_path()
        if path is None:
            return {}
        found: dict[str, bytes] = {}
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                found[path + suffix] = Path(path + suffix).read_bytes()
        return found

    @contextlib.contextmanager
    def reopened(self) -> Iterator[LedgerStore]:
        if isinstance(self.ledger, str):
            from .ledger import open_ledger

            store = open_ledger(self.ledger, schemes=self.plugins.ledger_schemes)
            try:
                yield store
            finally:
                store.close()
        else:
            yield self.ledger


def _reason(error: BaseException) -> str:
    if isinstance(error, HarnessError):
        return error.reason
    if isinstance(error, TimeoutError):
        return "timed out"
    return type(error).__name__


# -- judging ------------------------------------------------------------------------------------


def _result(
    name: str, problems: Sequence[str], ok_detail: str, not_run: str | None = None
) -> CheckResult:
    if not_run is not None:
        return CheckResult(name, False, f"not exercised: {not_run}")
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return CheckResult(name, False, _clip(problems[0], 200) + more)
    return CheckResult(name, True, ok_detail)


def _all_events(run: _Run) -> list[Event]:
    return [e for events in run.probe.events.values() for e in events]


def _all_turns(run: _Run) -> list[_Turn]:
    return [*run.ordinary, *([run.cancel_turn] if run.cancel_turn else [])]


def _timestamp_ok(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def _judge(
    run: _Run, stored: dict[str, list[dict[str, Any]]], read_error: str | None
) -> list[CheckResult]:
    from .serialize import event_to_dict

    probe = run.probe
    events = _all_events(run)
    nothing = run.descriptor_error or run.open_error
    results: list[CheckResult] = []

    # descriptor
    if run.descriptor_error is not None:
        results.append(CheckResult("descriptor", False, run.descriptor_error))
    else:
        d = run.descriptor
        assert d is not None
        features = ", ".join(sorted(d.features)) or "none"
        results.append(
            _result(
                "descriptor",
                run.descriptor_problems,
                f"{d.provider} {d.version or ''} protocol {d.protocol_version}, "
                f"targets {', '.join(sorted(d.targets))}, features {features}".replace("  ", " "),
            )
        )

    # turns-completed
    problems = []
    for turn in run.ordinary:
        terminal = turn.terminal
        if turn.error is not None:
            problems.append(f"{turn.label} did not start ({turn.error})")
        elif terminal is None:
            problems.append(f"{turn.label} ended without a terminal event")
        elif terminal.type != "turn.completed":
            reason = getattr(terminal.payload, "reason", None)
            hint = getattr(terminal.payload, "hint", None)
            why = f" ({reason}{': ' + hint if hint else ''})" if reason else ""
            problems.append(f"{turn.label} ended {terminal.type}{why}")
    results.append(
        _result(
            "turns-completed",
            problems,
            f"{len(run.ordinary)} ordinary turns completed",
            nothing if not run.ordinary else None,
        )
    )

    # envelope
    problems = []
    provider = run.descriptor.provider if run.descriptor else run.name
    for session_id, session_events in probe.events.items():
        ids: set[str] = set()
        for e in session_events:
            where = f"event {e.sequence} ({e.type})"
            if e.protocol_version != PROTOCOL_VERSION or isinstance(e.protocol_version, bool):
                problems.append(f"{where}: protocol_version {e.protocol_version!r}")
            if (
                not isinstance(e.event_id, str)
                or not 1 <= len(e.event_id) <= 256
                or has_control(e.event_id)
            ):
                problems.append(f"{where}: event_id is not a bounded string")
            if isinstance(e.sequence, bool) or not isinstance(e.sequence, int) or e.sequence < 1:
                problems.append(f"{where}: sequence is not a positive integer")
            if e.session_id != session_id or not 1 <= len(e.session_id) <= SESSION_ID_MAX:
                problems.append(f"{where}: session_id is wrong")
            if e.harness != provider:
                problems.append(f"{where}: harness {e.harness!r} is not {provider!r}")
            if not _timestamp_ok(e.timestamp):
                problems.append(f"{where}: timestamp {e.timestamp!r} is not ISO 8601 with a zone")
            if e.type in _SESSION_TYPES:
                if e.turn_id is not None:
                    problems.append(f"{where}: a session event carries a turn_id")
            elif (
                not isinstance(e.turn_id, str)
                or not 1 <= len(e.turn_id) <= TURN_ID_MAX
                or has_control(e.turn_id)
            ):
                problems.append(f"{where}: turn_id is missing or out of bounds")
            if e.parent_event_id is not None and e.parent_event_id not in ids:
                problems.append(f"{where}: parent_event_id names no earlier event")
            ids.add(e.event_id)
    results.append(
        _result("envelope", problems, f"{len(events)} events, all envelopes complete", nothing)
    )

    # sequence
    problems = []
    observed_order = {}
    for session_id, session_events in probe.events.items():
        sequences = [e.sequence for e in session_events]
        if sequences != list(range(1, len(sequences) + 1)):
            problems.append(f"session {session_id[:12]}: sequences {_span(sequences)} have gaps")
        observed_order.update({e.event_id: i for i, e in enumerate(session_events)})
    for turn in _all_turns(run):
        delivered = [e.sequence for e in turn.seen]
        if delivered and delivered != list(range(delivered[0], delivered[0] + len(delivered))):
            problems.append(f"{turn.label}: delivered out of order {_span(delivered)}")
    results.append(
        _result(
            "sequence",
            problems,
            f"{len(probe.events)} sessions, gap-free from 1, delivered in order",
            nothing,
        )
    )

    # event-ids
    seen_ids: dict[str, int] = {}
    for e in events:
        seen_ids[e.event_id] = seen_ids.get(e.event_id, 0) + 1
    dupes = sorted(i for i, n in seen_ids.items() if n > 1)
    results.append(
        _result(
            "event-ids",
            [f"{len(dupes)} duplicated ids, e.g. {dupes[0]!r}"] if dupes else [],
            f"{len(events)} unique ids",
            nothing,
        )
    )

    # one-terminal
    problems = list(probe.violations.get("one-terminal", []))
    by_turn: dict[str, list[Event]] = {}
    for e in events:
        if e.turn_id is not None:
            by_turn.setdefault(e.turn_id, []).append(e)
    for turn_id, turn_events in by_turn.items():
        types = [e.type for e in turn_events]
        terminals = sum(t in TERMINAL_TYPES for t in types)
        if types[0] != "turn.started":
            problems.append(f"{turn_id}: does not start with turn.started")
        if terminals != 1 or types[-1] not in TERMINAL_TYPES:
            problems.append(f"{turn_id}: {terminals} terminal events, last is {types[-1]}")
    for turn in _all_turns(run):
        types = [e.type for e in turn.seen]
        if turn.error is None and (
            not types
            or types[-1] not in TERMINAL_TYPES
            or sum(t in TERMINAL_TYPES for t in types) != 1
        ):
            problems.append(f"{turn.label}: the caller did not receive exactly one terminal, last")
    results.append(
        _result("one-terminal", problems, f"{len(by_turn)} turns, one terminal each, last", nothing)
    )

    # canonical-types
    problems = list(probe.violations.get("canonical-types", []))
    for e in events:
        cls = PAYLOAD_TYPES.get(e.type)
        if e.type not in EVENT_TYPES or cls is None or type(e.payload) is not cls:
            problems.append(f"event {e.sequence}: {e.type!r} is not canonical")
    results.append(
        _result(
            "canonical-types",
            problems,
            f"{len({e.type for e in events})} canonical types seen",
            nothing,
        )
    )

    # field-bounds
    problems = list(probe.violations.get("field-bounds", []))
    for e in events:
        problem = _payload_problem(e.payload) if type(e.payload) in _CANONICAL else None
        if problem is not None:
            problems.append(f"event {e.sequence} ({e.type}): {problem}")
    results.append(_result("field-bounds", problems, "every payload within bounds", nothing))

    # raw-fields
    problems = list(probe.violations.get("raw-fields", []))
    if run.export_bundle is not None:
        for data in run.export_bundle.get("events", []) or []:
            if not isinstance(data, dict):
                continue
            if set(data) != _ENVELOPE_KEYS:
                problems.append(f"exported event {data.get('sequence')}: envelope keys differ")
                continue
            cls = PAYLOAD_TYPES.get(str(data.get("type")))
            payload = data.get("payload")
            if cls is not None and isinstance(payload, dict):
                known = {a.name for a in attrs.fields(cls)}
                extra = sorted(set(payload) - known)
                if extra:
                    problems.append(
                        f"exported event {data.get('sequence')}: extra payload fields {extra}"
                    )
    results.append(
        _result("raw-fields", problems, "no provider fields beyond the contract's", nothing)
    )

    # resume
    if "resume" in run.features and not run.resume_problems and run.resume_not_run is None:
        ok = run.resume_note or "resumed"
    else:
        ok = run.resume_note
    results.append(_result("resume", run.resume_problems, ok, run.resume_not_run))

    # cancel
    problems = [*run.cancel_problems, *probe.violations.get("cancel", [])]
    cturn = run.cancel_turn
    claimed = "cancel" in run.features
    cancel_procs: list[_Proc] = []
    if cturn is not None and cturn.turn_id is not None:
        cancel_procs = [p for p in probe.processes if p.turn_id == cturn.turn_id]
        if claimed and not run.cancel_problems:
            terminal = cturn.terminal
            if terminal is None or terminal.type != "turn.cancelled":
                problems.append(
                    f"the caller received {terminal.type if terminal else 'no terminal'}, "
                    "not turn.cancelled"
                )
            elif getattr(terminal.payload, "by", None) != "host":
                problems.append("turn.cancelled does not say by=host")
        left = _survivors(cancel_procs, PROCESS_WAIT) if cancel_procs else []
        if left:
            problems.append(f"{len(left)} process(es) of the cancelled turn still alive: {left}")
    notes = "; ".join(run.cancel_notes)
    ok = (
        f"turn.cancelled reached the caller ({notes}); {len(cancel_procs)} turn process(es), none left"
        if claimed
        else notes
    )
    not_run = run.cancel_not_run or (nothing if cturn is None else None)
    results.append(_result("cancel", problems, ok, not_run))

    # close
    problems = [*run.close_problems, *probe.violations.get("close", [])]
    cancelled_turn = cturn.turn_id if cturn is not None else None
    session_procs = [p for p in probe.processes if p.turn_id != cancelled_turn or p.turn_id is None]
    left = _survivors(session_procs, PROCESS_WAIT) if session_procs else []
    if left:
        problems.append(f"{len(left)} process(es) still alive after close/release: {left}")
    results.append(
        _result(
            "close",
            problems,
            f"idempotent, refuses turns with session-closed {run.close_note}".strip()
            + f"; {len(session_procs)} process(es), none left",
            run.close_not_run,
        )
    )

    # usage
    problems = list(probe.violations.get("usage", []))
    count = 0
    for e in events:
        if isinstance(e.payload, UsageReported):
            count += 1
            problem = _usage_problem(e.payload.usage)
            if problem is not None:
                problems.append(f"event {e.sequence}: {problem}")
            elif "usage" not in run.features:
                problems.append(f"event {e.sequence}: usage emitted but not claimed")
    results.append(
        _result(
            "usage",
            sorted(set(problems), key=problems.index),
            f"{count} usage events, all valid"
            if count
            else "no usage emitted (absence means unknown)",
            nothing,
        )
    )

    # ledger-round-trip
    problems = []
    if read_error is not None:
        problems.append(read_error)
    else:
        by_id: dict[tuple[str, str], dict[str, Any]] = {}
        for session_id, session_events in probe.events.items():
            expected = [event_to_dict(e) for e in session_events]
            got = stored.get(session_id, [])
            if got != expected:
                problems.append(
                    f"session {session_id[:12]}: the ledger holds {len(got)} events, "
                    f"{len(expected)} were streamed"
                    + ("" if len(got) != len(expected) else ", and they differ")
                )
            by_id.update({(session_id, d["event_id"]): d for d in got})
        for t in _all_turns(run):
            for e in t.seen:
                if by_id.get((e.session_id, e.event_id)) != event_to_dict(e):
                    problems.append(
                        f"{t.label}: event {e.sequence} as delivered differs from the ledger"
                    )
                    break
    results.append(
        _result(
            "ledger-round-trip",
            problems,
            f"{sum(len(v) for v in stored.values())} events read back from "
            + ("SQLite" if run.sqlite_path() else "the ledger")
            + ", equal to the stream",
            nothing,
        )
    )

    # export
    results.append(_judge_export(run, stored))

    # canary
    results.append(_judge_canary(run, stored))
    return results


def _span(values: Sequence[int]) -> str:
    if len(values) <= 8:
        return str(list(values))
    return f"[{values[0]}, {values[1]}, ..., {values[-1]}] ({len(values)})"


def _judge_export(run: _Run, stored: dict[str, list[dict[str, Any]]]) -> CheckResult:
    from .export import EXPORT_FORMAT

    if run.export_session is None:
        return _result("export", [], "", run.open_error or run.descriptor_error or "no session")
    if run.export_error is not None:
        return CheckResult("export", False, run.export_error)
    bundle = run.export_bundle
    problems: list[str] = []
    if not isinstance(bundle, dict):
        return CheckResult("export", False, "the export is not a JSON object")
    try:
        text = json.dumps(bundle, allow_nan=False, ensure_ascii=False)
        if json.loads(text) != bundle:
            problems.append("the bundle changes through JSON (non-JSON types inside)")
    except (TypeError, ValueError) as error:
        problems.append(f"the bundle is not strict JSON ({type(error).__name__})")
    if bundle.get("format") != EXPORT_FORMAT or not isinstance(bundle.get("version"), int):
        problems.append("format/version missing")
    session = bundle.get("session")
    ref = run.main
    if not isinstance(session, dict) or ref is None or session.get("ref") != attrs.asdict(ref):
        problems.append("the session record is missing or names another session")
    expected = stored.get(run.export_session, [])
    events = bundle.get("events")
    if events != expected:
        count = len(events) if isinstance(events, list) else 0
        problems.append(f"the bundle holds {count} events, the ledger {len(expected)}")
    turns = bundle.get("turns")
    terminal = {
        d["turn_id"]: d for d in expected if d.get("type") in TERMINAL_TYPES and d.get("turn_id")
    }
    turn_ids = {d["turn_id"] for d in expected if d.get("turn_id")}
    if not isinstance(turns, list) or {t.get("turn_id") for t in turns} != turn_ids:
        problems.append("the bundle's turns do not cover every turn")
    else:
        for t in turns:
            end = terminal.get(t.get("turn_id"))
            status = end["type"].split(".", 1)[1] if end else "incomplete"
            if t.get("status") != status:
                problems.append(
                    f"turn {t.get('turn_id')}: status {t.get('status')} is not {status}"
                )
    return _result(
        "export",
        problems,
        f"strict JSON; {len(expected)} events and {len(turn_ids)} turns, equal to the ledger",
    )


def _judge_canary(run: _Run, stored: dict[str, list[dict[str, Any]]]) -> CheckResult:
    from .serialize import event_to_dict

    secrets_ = {"injected credential": run.probe.secret, "host environment": run.env_secret}
    places: dict[str, bytes] = {}
    places["streamed events"] = json.dumps(
        [event_to_dict(e) for e in _all_events(run)], ensure_ascii=False
    ).encode()
    places["delivered events"] = json.dumps(
        [event_to_dict(e) for t in _all_turns(run) for e in t.seen], ensure_ascii=False
    ).encode()
    places["streamed text"] = "\n".join(
        "".join(e.payload.text for e in t.seen if isinstance(e.payload, MessageDelta))
        for t in _all_turns(run)
    ).encode()
    places["ledger events"] = json.dumps(stored, ensure_ascii=False).encode()
    for path, data in run.ledger_files_open.items():
        places[f"{os.path.basename(path)} (open)"] = data
    for path, data in run.ledger_bytes().items():
        places[f"{os.path.basename(path)} (closed)"] = data
    if run.export_bundle is not None:
        with contextlib.suppress(TypeError, ValueError):
            places["export"] = json.dumps(run.export_bundle, ensure_ascii=False).encode()
    problems = []
    for label, secret in secrets_.items():
        needle = secret.encode()
        for place, data in places.items():
            if needle in data:
                problems.append(f"the {label} canary appears in the {place}")
    if not run.credential_injected and run.main is not None:
        problems.append("the canary credential never reached the session environment")
    sqlite = " and the SQLite files" if run.ledger_files_open else ""
    return _result(
        "canary",
        problems,
        f"neither canary in events, deliveries, ledger{sqlite} or export",
        run.open_error or run.descriptor_error,
    )


# -- entry points -------------------------------------------------------------------------------


async def _enter_profile(stack: contextlib.AsyncExitStack, value: Any) -> ConformanceProfile | None:
    if value is None:
        return None
    if isinstance(value, ConformanceProfile):
        return value
    if hasattr(value, "__aenter__"):
        entered = await stack.enter_async_context(value)
    elif hasattr(value, "__enter__"):
        entered = stack.enter_context(value)
    else:
        raise TypeError("conformance_profile returned neither a profile nor a context manager")
    if not isinstance(entered, ConformanceProfile):
        raise TypeError("the conformance profile context did not yield a ConformanceProfile")
    return entered


async def arun_conformance(
    harness: str | Any,
    *,
    workspace: str | os.PathLike[str] | None = None,
    plugins: Plugins | None = None,
    timeout: float = 60.0,
    profile: ConformanceProfile | None = None,
    ledger: str | LedgerStore | None = None,
    controller_factory: Callable[..., Controller] | None = None,
) -> ConformanceReport:
    """Run the conformance kit (async form of :func:`run_conformance`)."""
    started = time.monotonic()
    if isinstance(harness, str):
        name = harness
        plugins = plugins if plugins is not None else Plugins()
    else:
        adapter = as_adapter(harness)
        if adapter is None:
            raise TypeError(
                "run_conformance needs a harness name, an adapter or an @harness function"
            )
        name = adapter.name
        if plugins is None:
            plugins = plugins_from([harness])
        elif name not in plugins.harnesses:
            plugins.register(harness)

    root = Path(tempfile.mkdtemp(prefix="harness-conformance-"))
    secret = "hc-canary-" + secrets.token_hex(16)
    env_secret = "hc-env-canary-" + secrets.token_hex(16)
    probe = _Probe(secret)
    saved_env: dict[str, str | None] = {}
    stack = contextlib.AsyncExitStack()
    registered = False
    try:
        async with stack:
            if profile is None:
                answer = plugins.pm.hook.conformance_profile(harness=name)
                if answer is None and name in plugins.harnesses:
                    answer = getattr(plugins.harnesses[name], "conformance_profile", None)
                    answer = answer() if callable(answer) else answer
                profile = await _enter_profile(stack, answer) or ConformanceProfile()
            if workspace is None:
                workspace = root / "workspace"
                workspace.mkdir()
            for key, value in {**profile.env, CANARY_ENV_VAR: env_secret}.items():
                saved_env[key] = os.environ.get(key)
                os.environ[key] = str(value)
            registered = plugins.register(probe, name=PROBE_NAME)
            if not registered:
                raise RuntimeError("the conformance probe could not be registered")
            run = _Run(
                name=name,
                plugins=plugins,
                profile=profile,
                workspace=os.fspath(workspace),
                root=root,
                ledger=ledger if ledger is not None else f"sqlite:///{root}/ledger.sqlite",
                timeout=timeout,
                factory=controller_factory or Controller,
                probe=probe,
                env_secret=env_secret,
            )
            await run.first_controller()
            await run.second_controller()
            stored: dict[str, list[dict[str, Any]]] = {}
            read_error: str | None = None
            try:
                from .serialize import event_to_dict

                with run.reopened() as store:
                    for session_id in probe.events:
                        stored[session_id] = [event_to_dict(e) for e in store.events(session_id)]
            except HarnessError as error:
                read_error = f"the ledger could not be read back ({error.reason})"
            checks = await anyio.to_thread.run_sync(_judge, run, stored, read_error)
    finally:
        for key, old in saved_env.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        if registered:
            plugins.pm.unregister(name=PROBE_NAME)
            plugins.info.pop(PROBE_NAME, None)
            plugins.credential_resolvers.pop(RESOLVER_NAME, None)
        _kill_leftovers(probe.processes)
        shutil.rmtree(root, ignore_errors=True)
    return ConformanceReport(
        harness=name, checks=tuple(checks), duration=time.monotonic() - started
    )


def run_conformance(
    harness: str | Any,
    *,
    workspace: str | os.PathLike[str] | None = None,
    plugins: Plugins | None = None,
    timeout: float = 60.0,
    profile: ConformanceProfile | None = None,
    ledger: str | LedgerStore | None = None,
    controller_factory: Callable[..., Controller] | None = None,
) -> ConformanceReport:
    """Run every conformance check against ``harness`` and return the report.

    ``harness`` is a registered harness name (looked up in ``plugins``, by default a fresh
    :class:`Plugins` loading the installed entry points), an adapter object, or an ``@harness``
    function. ``workspace`` defaults to a temporary directory; ``timeout`` bounds each turn and
    each open/resume/close. ``profile`` overrides what the harness's ``conformance_profile`` hook
    answers. ``ledger`` defaults to a fresh SQLite file in a temporary directory (a URL, or a
    :class:`LedgerStore` object shared by both controllers). ``controller_factory`` builds the
    controllers (default :class:`Controller`), so a host's own control plane can be checked too.

    Sync; from async code use :func:`arun_conformance`. The run sets two variables in
    ``os.environ`` while it lasts (the host canary and the profile's ``env``): do not run two
    kits concurrently in one process.
    """
    result: ConformanceReport = anyio.run(
        lambda: arun_conformance(
            harness,
            workspace=workspace,
            plugins=plugins,
            timeout=timeout,
            profile=profile,
            ledger=ledger,
            controller_factory=controller_factory,
        )
    )
    return result


def cli_main(args: argparse.Namespace) -> int:
    """``harness conformance NAME [--json] [--workspace DIR] [--timeout S]``."""
    plugins = Plugins()
    name = str(args.name)
    if name not in plugins.harnesses:
        known = ", ".join(plugins.harness_names()) or "none installed"
        sys.stderr.write(f"harness: error: unknown harness {name!r} (known: {known})\n")
        return 2
    if not getattr(args, "json", False):
        sys.stderr.write(f"harness: running the conformance kit against {name}...\n")
    report = run_conformance(
        name,
        workspace=getattr(args, "workspace", None),
        plugins=plugins,
        timeout=float(getattr(args, "timeout", None) or 60.0),
    )
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.format_table() + "\n")
    return 0 if report.passed else 1
