"""OpenTelemetry for harness_core: an ``on_event`` observer that turns the event stream into
traces and metrics.

- a trace per session: span ``harness.session {harness}`` from ``session.opened`` (or
  ``session.resumed``) to ``session.closed``;
- a span per turn, ``invoke_agent {harness}`` (``gen_ai.operation.name=invoke_agent``), with the
  usage the turn reported (``gen_ai.usage.*``), its status, and ``error.type`` = the fixed
  failure reason;
- a span per tool call, ``execute_tool {tool}``, and per permission request,
  ``harness.permission {tool}``, children of their turn;
- metrics: ``gen_ai.client.token.usage`` (histogram per token type),
  ``gen_ai.client.operation.duration`` (turn seconds), ``harness.cost`` (USD) and
  ``harness.turns`` (by status).

Span times are the events' timestamps. Nothing but contract fields is exported: prompts and
answers are not (they may hold private text); summaries are the adapters' safe summaries.

The entry point registers :data:`observer`, which uses the global providers and does nothing
until the host installs an SDK ``TracerProvider``. A host may instead register its own
``OtelObserver(tracer_provider=..., meter_provider=...)`` explicitly.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from attrs import define, field
from harness_hookspecs import Event, hookimpl
from harness_hookspecs import events as ev

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["OtelObserver", "observer"]

SCOPE = "harness_otel"
_TURN_STATUS = {
    "turn.completed": "completed",
    "turn.failed": "failed",
    "turn.cancelled": "cancelled",
}


def _trace() -> Any:
    # Imported when first needed (~10 ms): a `harness run` without an SDK never needs it.
    from opentelemetry import trace

    return trace


def _global_provider_possible() -> bool:
    """Whether a global tracer provider can be set: only by importing ``opentelemetry.trace``
    (``set_tracer_provider``, auto-instrumentation) or through its environment variable."""
    return "opentelemetry.trace" in sys.modules or "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def _ns(timestamp: str) -> int:
    from datetime import datetime  # here: a `harness run` without an SDK never needs it

    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


@define
class _Turn:
    span: Span
    start_ns: int
    usage: dict[str, float] = field(factory=dict)
    children: dict[str, Span] = field(factory=dict)  # call/request id -> span


@define
class _Session:
    harness: str
    model: str | None = None
    span: Span | None = None
    turns: dict[str, _Turn] = field(factory=dict)


class OtelObserver:
    """The observer plugin. Register an instance; it implements ``on_event``."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer: Any = None
        self._instruments: Any = None
        self._sessions: dict[str, _Session] = {}

    @property
    def idle(self) -> bool:
        """Keeps no state: no tracer made, no session's span open (the state without an SDK)."""
        return self._tracer is None and not self._sessions

    # -- setup ---------------------------------------------------------------------------------

    def _active(self) -> bool:
        # Without an SDK the global provider is a proxy: spans would be dropped anyway, so skip
        # the bookkeeping (this observer is installed by default with the plugin).
        if self._tracer_provider is not None:
            return True
        if not _global_provider_possible():
            return False
        trace = _trace()
        return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    def _setup(self) -> None:
        if self._tracer is not None:
            return
        from opentelemetry import metrics

        self._tracer = _trace().get_tracer(SCOPE, tracer_provider=self._tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=self._meter_provider)
        self._instruments = (
            meter.create_histogram(
                "gen_ai.client.token.usage", unit="{token}", description="tokens per turn"
            ),
            meter.create_histogram(
                "gen_ai.client.operation.duration", unit="s", description="turn duration"
            ),
            meter.create_counter("harness.cost", unit="USD", description="reported cost"),
            meter.create_counter("harness.turns", unit="{turn}", description="turns by status"),
        )

    # -- the hook ------------------------------------------------------------------------------

    @hookimpl
    def on_event(self, event: Event) -> None:
        if not self._active():
            return
        self._setup()
        payload = event.payload
        session = self._sessions.get(event.session_id)
        if isinstance(payload, ev.SessionOpened | ev.SessionResumed):
            session = self._open(event, payload)
            return
        if session is None:
            session = self._sessions[event.session_id] = _Session(harness=event.harness)
        if isinstance(payload, ev.SessionClosed):
            self._close(event, session)
        elif isinstance(payload, ev.TurnStarted):
            self._start_turn(event, session)
        elif event.turn_id is not None and event.turn_id in session.turns:
            self._turn_event(event, session, session.turns[event.turn_id])

    def end_all(self, at: str | None = None) -> None:
        """End every span still open (a host shutting down without closing its sessions), now
        or at the timestamp ``at`` (a replay ends them at its last event)."""
        end = _ns(at) if at else None
        for session_id in list(self._sessions):
            session = self._sessions.pop(session_id)
            for turn in session.turns.values():
                for child in turn.children.values():
                    child.end(end_time=end)
                turn.span.end(end_time=end)
            if session.span is not None:
                session.span.end(end_time=end)

    # -- sessions and turns --------------------------------------------------------------------

    def _common(self, event: Event, session: _Session) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.system": session.harness,
            "gen_ai.agent.name": session.harness,
            "gen_ai.conversation.id": event.session_id,
        }
        if session.model:
            attributes["gen_ai.request.model"] = session.model
        return attributes

    def _open(self, event: Event, payload: Any) -> _Session:
        previous = self._sessions.pop(event.session_id, None)
        if previous is not None and previous.span is not None:
            previous.span.end(end_time=_ns(event.timestamp))
        session = _Session(harness=event.harness, model=getattr(payload, "model", None))
        attributes = self._common(event, session)
        attributes["harness.target"] = payload.target
        if isinstance(payload, ev.SessionOpened):
            attributes["harness.posture"] = payload.posture
            if payload.sandbox:
                attributes["harness.sandbox"] = payload.sandbox
        attributes["harness.session.resumed"] = isinstance(payload, ev.SessionResumed)
        session.span = self._tracer.start_span(
            f"harness.session {event.harness}",
            context=_trace().set_span_in_context(_trace().INVALID_SPAN),  # a new trace per session
            kind=_trace().SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )
        self._sessions[event.session_id] = session
        return session

    def _close(self, event: Event, session: _Session) -> None:
        end = _ns(event.timestamp)
        for turn in session.turns.values():
            turn.span.end(end_time=end)
        if session.span is not None:
            session.span.end(end_time=end)
        self._sessions.pop(event.session_id, None)

    def _start_turn(self, event: Event, session: _Session) -> None:
        assert event.turn_id is not None
        attributes = self._common(event, session)
        attributes["gen_ai.operation.name"] = "invoke_agent"
        attributes["harness.turn.id"] = event.turn_id
        parent = session.span if session.span is not None else _trace().INVALID_SPAN
        start = _ns(event.timestamp)
        span = self._tracer.start_span(
            f"invoke_agent {session.harness}",
            context=_trace().set_span_in_context(parent),
            kind=_trace().SpanKind.CLIENT,
            attributes=attributes,
            start_time=start,
        )
        session.turns[event.turn_id] = _Turn(span=span, start_ns=start)

    def _turn_event(self, event: Event, session: _Session, turn: _Turn) -> None:
        payload = event.payload
        at = _ns(event.timestamp)
        if isinstance(payload, ev.ToolStarted):
            self._child(
                turn,
                payload.call_id,
                f"execute_tool {payload.name}",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": payload.name,
                    "gen_ai.tool.call.id": payload.call_id,
                },
                at,
            )
        elif isinstance(payload, ev.ToolCompleted):
            span = turn.children.pop(payload.call_id, None)
            if span is None:  # a completion without a start: a zero-length span
                span = self._child(turn, payload.call_id, f"execute_tool {payload.name}", {}, at)
                turn.children.pop(payload.call_id)
            if payload.summary:
                span.set_attribute("harness.tool.summary", payload.summary)
            if not payload.ok:
                span.set_status(_trace().Status(_trace().StatusCode.ERROR))
                span.set_attribute("error.type", "tool-failed")
            span.end(end_time=at)
        elif isinstance(payload, ev.PermissionRequested):
            attributes = {"harness.permission.request_id": payload.request_id}
            if payload.tool:
                attributes["gen_ai.tool.name"] = payload.tool
            name = f"harness.permission {payload.tool or 'request'}"
            self._child(turn, "perm:" + payload.request_id, name, attributes, at)
        elif isinstance(payload, ev.PermissionResolved):
            span = turn.children.pop("perm:" + payload.request_id, None)
            if span is not None:
                span.set_attribute("harness.permission.decision", payload.decision)
                span.set_attribute("harness.permission.source", payload.source)
                span.end(end_time=at)
        elif isinstance(payload, ev.UsageReported):
            self._usage(turn, payload)
        elif event.type in _TURN_STATUS:
            self._finish_turn(event, session, turn, at)

    def _child(self, turn: _Turn, key: str, name: str, attributes: dict[str, Any], at: int) -> Span:
        span: Span = self._tracer.start_span(
            name,
            context=_trace().set_span_in_context(turn.span),
            kind=_trace().SpanKind.INTERNAL,
            attributes=attributes,
            start_time=at,
        )
        turn.children[key] = span
        return span

    def _usage(self, turn: _Turn, payload: ev.UsageReported) -> None:
        usage = payload.usage
        for name, key in (
            ("input_tokens", "gen_ai.usage.input_tokens"),
            ("output_tokens", "gen_ai.usage.output_tokens"),
            ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
            ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
            ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
            ("cost_usd", "harness.cost_usd"),
        ):
            value = getattr(usage, name)
            if value is not None:
                turn.usage[key] = turn.usage.get(key, 0) + value

    def _finish_turn(self, event: Event, session: _Session, turn: _Turn, at: int) -> None:
        assert event.turn_id is not None
        status = _TURN_STATUS[event.type]
        span = turn.span
        for child in turn.children.values():  # tools still open when the turn ended
            child.end(end_time=at)
        turn.children.clear()
        span.set_attribute("harness.turn.status", status)
        for key, value in turn.usage.items():
            span.set_attribute(key, value)
        payload = event.payload
        if isinstance(payload, ev.TurnFailed):
            span.set_attribute("error.type", payload.reason)
            span.set_status(_trace().Status(_trace().StatusCode.ERROR, payload.message))
        elif isinstance(payload, ev.TurnCancelled):
            span.set_attribute("harness.turn.cancelled_by", payload.by)
        span.end(end_time=at)
        session.turns.pop(event.turn_id, None)
        self._record_metrics(event, session, turn, status, at)

    def _record_metrics(
        self, event: Event, session: _Session, turn: _Turn, status: str, at: int
    ) -> None:
        tokens, duration, cost, turns = self._instruments
        base = {"gen_ai.operation.name": "invoke_agent", "gen_ai.system": session.harness}
        if session.model:
            base["gen_ai.request.model"] = session.model
        for key, kind in (
            ("gen_ai.usage.input_tokens", "input"),
            ("gen_ai.usage.output_tokens", "output"),
        ):
            if key in turn.usage:
                tokens.record(turn.usage[key], {**base, "gen_ai.token.type": kind})
        if "harness.cost_usd" in turn.usage:
            cost.add(turn.usage["harness.cost_usd"], base)
        outcome = dict(base, **{"harness.turn.status": status})
        if isinstance(event.payload, ev.TurnFailed):
            outcome["error.type"] = event.payload.reason
        duration.record(max(at - turn.start_ns, 0) / 1e9, outcome)
        turns.add(1, outcome)


#: The instance the entry point registers (global providers).
observer = OtelObserver()
