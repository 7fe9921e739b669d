"""The fake adapter of the acceptance suite (written for the tests, not shipped as a harness),
and the deliberately broken adapters / control planes that prove each conformance check can fail.

The fake speaks the whole contract like a real CLI adapter would: provider-native session ids
kept verbatim, durable per-session state in ``context.state_dir`` (so a new controller can resume),
a real subprocess per slow turn spawned through ``context.spawn``, provider-shaped dicts turned into
payloads with ``make_payload`` (raw fields projected out), usage only because it claims ``usage``.

Prompts: anything -> a scripted successful turn; ``sleep N`` -> a subprocess that sleeps N seconds;
``fail`` -> ``turn.failed``; ``crash`` -> raises with raw text; ``truncate`` -> ends without a terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import attrs
from harness_hookspecs import (
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    SessionRef,
    Status,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
    assert_supported,
)
from harness_hookspecs.events import make_payload

import harness_core.recorder as recorder_module
from harness_core import Controller
from harness_core.conformance import CANARY_ENV_VAR, ConformanceProfile
from harness_core.ledger import MemoryStore

SLOW = ConformanceProfile(prompt="hello there", slow_prompt="sleep 30")


class FakeAdapter:
    name = "fake"
    features: tuple[str, ...] = ("resume", "cancel", "usage")
    protocol_version = 1

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: list[str] = []

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name,
            targets={"local"},
            features=self.features,
            version="1.0",
            protocol_version=self.protocol_version,
        )

    # -- sessions ---------------------------------------------------------------------------

    def _state_file(self, context: Any) -> Path:
        return Path(context.state_dir) / "fake-session.json"

    async def open_session(self, request, context):
        assert_supported(self.describe(), request.target)
        if request.workspace is None:
            raise HarnessError("invalid-request", "a workspace is required")
        native = "fake-native:" + uuid.uuid4().hex  # opaque provider id, kept verbatim
        self.sessions[native] = {"turns": 0}
        return SessionRef(provider=self.name, target=request.target, session_id=native)

    async def resume_session(self, request, context):
        assert_supported(self.describe(), request.session.target, "resume")
        state = self._state_file(context)
        if not state.exists():
            raise HarnessError("session-not-found")
        self.sessions[request.session.session_id] = json.loads(state.read_text())
        return request.session

    async def close_session(self, request, context):
        self.sessions.pop(request.session.session_id, None)

    async def cancel_turn(self, request, context):
        self.cancelled.append(request.turn_id)

    # -- turns ------------------------------------------------------------------------------

    async def run_turn(self, request, context):
        session = self.sessions.get(request.session.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        session["turns"] += 1
        self._state_file(context).write_text(json.dumps(session))
        words = request.prompt.split()
        if len(words) == 2 and words[0] == "sleep":
            async for item in self.slow_turn(float(words[1]), context):
                yield item
            return
        if request.prompt == "fail":
            yield Status(message="about to fail")
            yield TurnFailed(reason="provider-failed", hint="the fake provider said no")
            return
        if request.prompt == "crash":
            yield Status(message="about to crash")
            raise RuntimeError("Traceback: raw provider text sk-ant-fakefakefakefakefake")
        if request.prompt == "truncate":
            yield MessageDelta(text="partial")
            return
        async for item in self.ordinary_turn(request, session):
            yield item

    async def slow_turn(self, seconds: float, context):
        process = await context.spawn([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        yield Status(message="working")
        await process.wait()
        yield TurnCompleted(text="slept")

    async def ordinary_turn(self, request, session):
        yield Status(message=f"turn {session['turns']}")
        # Provider-shaped records with fields the contract does not have: projected out.
        yield make_payload(
            "tool.started", {"call_id": "c1", "name": "read", "raw_arguments": {"path": "/etc"}}
        )
        yield make_payload(
            "tool.completed", {"call_id": "c1", "name": "read", "ok": True, "stdout": "secret"}
        )
        text = f"turn {session['turns']}: " + request.prompt
        for word in text.split(" "):
            yield MessageDelta(text=word + " ")
        yield MessageCompleted(text=text)
        yield make_payload(
            "usage",
            {"usage": {"input_tokens": 3, "output_tokens": 5, "provider_billing_id": "b-1"}},
        )
        yield TurnCompleted(text=text)


# -- deliberately broken adapters: each breaks exactly one check --------------------------------


def _bypass(payload: Any, **fields: Any) -> Any:
    """Set fields on a frozen payload without running its validators (what a buggy adapter
    that builds payloads by hand, or mutates them, ends up doing)."""
    for key, value in fields.items():
        object.__setattr__(payload, key, value)
    return payload


class BadProtocol(FakeAdapter):
    """descriptor: claims a protocol version this runtime does not speak."""

    name = "bad-protocol"
    protocol_version = 2


class FailsTurns(FakeAdapter):
    """turns-completed: every ordinary turn ends ``turn.failed`` (a weak kit would say PASS)."""

    name = "fails-turns"

    async def ordinary_turn(self, request, session):
        yield MessageDelta(text="trying")
        yield TurnFailed(reason="provider-failed")


class TalksAfterTerminal(FakeAdapter):
    """one-terminal: keeps yielding after its terminal event."""

    name = "talks-after-terminal"

    async def ordinary_turn(self, request, session):
        async for item in super().ordinary_turn(request, session):
            yield item
        yield Status(message="one more thing")


class YieldsDicts(FakeAdapter):
    """canonical-types: yields a provider dict instead of a payload."""

    name = "yields-dicts"

    async def ordinary_turn(self, request, session):
        yield {"type": "status", "message": "raw provider record"}
        async for item in super().ordinary_turn(request, session):
            yield item


class BypassesBounds(FakeAdapter):
    """field-bounds: a status summary of 500 characters with a control character."""

    name = "bypasses-bounds"

    async def ordinary_turn(self, request, session):
        yield _bypass(Status(message="ok"), message="x" * 499 + "\x1b")
        async for item in super().ordinary_turn(request, session):
            yield item


@attrs.frozen
class RawDelta(MessageDelta):
    raw: dict = attrs.field(factory=dict)


class LeaksRawFields(FakeAdapter):
    """raw-fields: yields a payload subclass carrying the provider's raw record."""

    name = "leaks-raw-fields"

    async def ordinary_turn(self, request, session):
        yield RawDelta(text="hello ", raw={"provider": "internal", "logprobs": [0.1]})
        async for item in super().ordinary_turn(request, session):
            yield item


class ForgetfulResume(FakeAdapter):
    """resume: claims ``resume`` but cannot reattach to its own session."""

    name = "forgetful-resume"

    async def resume_session(self, request, context):
        raise HarnessError("session-not-found")


class MemoryOnlyResume(FakeAdapter):
    """resume-process: resumes only sessions this process opened (memory, not durable state):
    a new controller resumes, a new process cannot (the issue's ``memo`` bug, generalised)."""

    name = "memory-only-resume"
    opened: ClassVar[set[str]] = set()

    async def open_session(self, request, context):
        ref = await super().open_session(request, context)
        self.opened.add(ref.session_id)
        return ref

    async def resume_session(self, request, context):
        if request.session.session_id not in self.opened:
            raise HarnessError("session-not-found")
        return await super().resume_session(request, context)


class LeaksTurnProcess(FakeAdapter):
    """cancel: starts its turn process behind the runtime's back; it survives the cancel."""

    name = "leaks-turn-process"

    async def slow_turn(self, seconds: float, context):
        subprocess.Popen(
            [sys.executable, "-c", f"import time; time.sleep({seconds})"],
            start_new_session=True,
        )
        yield Status(message="working")
        await anyio.sleep(seconds)
        yield TurnCompleted(text="slept")


class LeaksSessionProcess(FakeAdapter):
    """close: starts a helper process at open and never stops it."""

    name = "leaks-session-process"

    async def open_session(self, request, context):
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
        )
        return await super().open_session(request, context)


class NegativeUsage(FakeAdapter):
    """usage: reports a negative token count."""

    name = "negative-usage"

    async def ordinary_turn(self, request, session):
        yield UsageReported(usage=_bypass(Usage(input_tokens=1), input_tokens=-7))
        async for item in super().ordinary_turn(request, session):
            yield item


class LeaksHostEnv(FakeAdapter):
    """canary: copies a host-environment secret (not a registered credential) into an event."""

    name = "leaks-host-env"

    async def ordinary_turn(self, request, session):
        yield Status(message="env: " + os.environ.get(CANARY_ENV_VAR, "unset"))
        async for item in super().ordinary_turn(request, session):
            yield item


# -- deliberately broken control planes and stores ----------------------------------------------
# The envelope, the sequence, event ids, the ledger and the export are stamped or kept by the
# runtime, so no adapter can break them through the contract. The kit checks them anyway (a host's
# own control plane or a ledger store plugin can), and these prove those checks can fail.


class NaiveTimestamps(Controller):
    """envelope: stamps timestamps without a time zone."""

    async def __aenter__(self):
        self.original_now = recorder_module.now
        recorder_module.now = lambda: "2024-01-01T00:00:00"  # the recorder stamps every event
        return await super().__aenter__()

    async def __aexit__(self, *exc_info):
        try:
            return await super().__aexit__(*exc_info)
        finally:
            recorder_module.now = self.original_now


class _Reordered:
    """Streams a turn's events with its second and third swapped (the rest live, so the kit's
    steer phase still meets a running turn: only the sequence check may fail)."""

    def __init__(self, turn):
        self._turn = turn
        self.turn_id = turn.turn_id
        self._events = turn.__aiter__()
        self._position = 0
        self._held: list[Any] = []

    async def cancel(self, by="host"):
        await self._turn.cancel(by)

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._held:
            return self._held.pop(0)
        event = await self._events.__anext__()
        self._position += 1
        if self._position == 2:  # swap the second and third when a fourth follows (never the end)
            following = []
            async for later in self._events:
                following.append(later)
                if len(following) == 2:
                    break
            self._position += len(following)
            if len(following) == 2:
                self._held = [event, following[1]]
                return following[0]
            self._held = following
        return event


class ReorderingDelivery(Controller):
    """sequence: delivers a turn's events to the caller out of order."""

    @asynccontextmanager
    async def turn(self, session, prompt, **kwargs):
        async with super().turn(session, prompt, **kwargs) as turn:
            yield _Reordered(turn)


class SharedIdPrefix(Controller):
    """event-ids: event ids restart in every session (``ev_1``, ``ev_2``... again)."""

    async def _attach(self, *args, **kwargs):
        live = await super()._attach(*args, **kwargs)
        live.recorder.prefix = "ev_"
        return live


class LossyStore(MemoryStore):
    """ledger-round-trip: a store that loses the last event of a session on read."""

    def events(self, session_id, *, after=0, limit=None):
        return super().events(session_id, after=after, limit=limit)[:-1]


class IncompleteExport(Controller):
    """export: the bundle leaves out the last event."""

    def export(self, session_id):
        bundle = super().export(session_id)
        bundle["events"] = bundle["events"][:-1]
        return bundle


class RunsStrictUnchecked(Controller):
    """approvals: a runtime that runs the strict posture on a harness that cannot ask."""

    async def open_session(self, request=None, /, **fields):
        if fields.get("posture") == "strict":
            fields["posture"] = "auto"
        return await super().open_session(request, **fields)


#: check -> (adapter class, extra run_conformance kwargs)
BROKEN: dict[str, tuple[type[FakeAdapter], dict[str, Any]]] = {
    "descriptor": (BadProtocol, {}),
    "turns-completed": (FailsTurns, {}),
    "envelope": (FakeAdapter, {"controller_factory": NaiveTimestamps}),
    "sequence": (FakeAdapter, {"controller_factory": ReorderingDelivery}),
    "event-ids": (FakeAdapter, {"controller_factory": SharedIdPrefix, "ledger": "memory-shared"}),
    "one-terminal": (TalksAfterTerminal, {}),
    "canonical-types": (YieldsDicts, {}),
    "field-bounds": (BypassesBounds, {}),
    "raw-fields": (LeaksRawFields, {}),
    "resume": (ForgetfulResume, {}),
    "resume-process": (MemoryOnlyResume, {}),
    "cancel": (LeaksTurnProcess, {}),
    "close": (LeaksSessionProcess, {}),
    "usage": (NegativeUsage, {}),
    "approvals": (FakeAdapter, {"controller_factory": RunsStrictUnchecked}),
    "ledger-round-trip": (FakeAdapter, {"ledger": "lossy"}),
    "export": (FakeAdapter, {"controller_factory": IncompleteExport}),
    "canary": (LeaksHostEnv, {}),
}


def broken_kwargs(check: str) -> tuple[FakeAdapter, dict[str, Any]]:
    cls, kwargs = BROKEN[check]
    kwargs = dict(kwargs)
    if kwargs.get("ledger") == "memory-shared":
        kwargs["ledger"] = MemoryStore()  # SQLite itself refuses duplicate ids
    elif kwargs.get("ledger") == "lossy":
        kwargs["ledger"] = LossyStore()
    return cls(), kwargs
