"""Which host tools a session gets, and one bridged call: caps, safe summaries, no raw errors."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import attrs
from harness_hookspecs import HarnessError, HostTool, Payload, ToolCompleted, ToolStarted
from harness_hookspecs.host_tools import ToolCaller

#: Results longer than this (UTF-8 bytes) are cut, and the call's summary says so.
DEFAULT_MAX_RESULT_BYTES = 64 * 1024
DEFAULT_MAX_CALLS_PER_TURN = 32
#: Ledger tool names of bridged calls: ``bridge.<tool>`` (distinct from the CLI's own names).
EVENT_PREFIX = "bridge."
TRUNCATED = "\n[truncated by the harness bridge]"

#: ``sink(payload)`` records an event in the running turn; False once the turn has ended.
Sink = Callable[[Payload], bool]
#: ``await answer(arguments)`` -> the text the CLI expects back from its permission-prompt tool
#: (the adapter knows the CLI's protocol; it asks the host's approval seam).
Answer = Callable[[Mapping[str, Any]], Awaitable[str]]


@dataclass(frozen=True)
class Limits:
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_calls_per_turn: int = DEFAULT_MAX_CALLS_PER_TURN

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Limits:
        values = {}
        for key in ("max_result_bytes", "max_calls_per_turn"):
            value = config.get(key)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 2**26:
                raise HarnessError("invalid-request", f"mcp_loopback.{key} must be a positive int")
            values[key] = value
        return cls(**values)


def _patterns(config: Mapping[str, Any], key: str, default: Sequence[str]) -> tuple[str, ...]:
    value = config.get(key, default)
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        raise HarnessError("invalid-request", f"mcp_loopback.{key} must be a list of patterns")
    return tuple(value)


def select_tools(tools: Iterable[HostTool], config: Mapping[str, Any]) -> list[HostTool]:
    """The tools a session's ``mcp_loopback`` config selects (seed 004's include/exclude globs).

    ``include`` defaults to every tool, ``exclude`` to none; ``enabled: false`` selects none.
    A ``mutating`` tool is selected only when ``grant`` names it too (read-only by default).
    """
    if not isinstance(config, Mapping):
        raise HarnessError("invalid-request", "mcp_loopback must be a mapping")
    if config.get("enabled", True) is False:
        return []
    include = _patterns(config, "include", ("*",))
    exclude = _patterns(config, "exclude", ())
    grant = _patterns(config, "grant", ())
    return [
        tool
        for tool in tools
        if any(fnmatch.fnmatchcase(tool.name, p) for p in include)
        and not any(fnmatch.fnmatchcase(tool.name, p) for p in exclude)
        and (not tool.mutating or any(fnmatch.fnmatchcase(tool.name, p) for p in grant))
    ]


def render(result: Any) -> str:
    """A tool's return value as the text the model sees."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


def cap(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode()
    if len(data) <= limit:
        return text, False
    room = max(0, limit - len(TRUNCATED.encode()))
    return data[:room].decode(errors="ignore") + TRUNCATED, True


@dataclass
class CallOutcome:
    text: str
    ok: bool


class RunCalls:
    """The calls one run made through the bridge: counted, capped, recorded through ``sink``;
    the ones still in flight when the run ends are cancelled (nothing waits for a dead turn)."""

    def __init__(
        self, run_id: str, sink: Sink, limits: Limits, caller: ToolCaller | None = None
    ) -> None:
        self.run_id = run_id
        #: who calls (the run's session, turn, harness, agent, user, posture)
        self.caller = caller
        self.sink = sink
        self.limits = limits
        self.count = 0
        #: the run's permission-prompt handler, when its approvals go through the bridge
        self.answer: Answer | None = None
        self.approvals = 0
        self._in_flight: set[anyio.CancelScope] = set()
        self.ended = False

    def end(self) -> None:
        self.ended = True
        for scope in self._in_flight:
            scope.cancel()

    async def approve(self, arguments: Mapping[str, Any]) -> CallOutcome:
        """One permission prompt: answered by the run's handler (the approval seam records it
        as ``permission.requested``/``permission.resolved``, not as a tool call)."""
        if self.answer is None or self.ended:
            return CallOutcome("The run has ended.", False)
        self.approvals += 1
        text: str | None = None
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                text = await self.answer(arguments)
            except Exception:
                text = None
            finally:
                self._in_flight.discard(scope)
        if text is None:
            return CallOutcome("The approval failed.", False)
        return CallOutcome(text, True)

    async def call(self, tool: HostTool, arguments: Mapping[str, Any]) -> CallOutcome:
        self.count += 1
        call_id = f"bridge_{self.count}"
        name = EVENT_PREFIX + tool.name
        if self.count > self.limits.max_calls_per_turn:
            self.sink(ToolCompleted(call_id=call_id, name=name, ok=False, summary="call limit"))
            return CallOutcome("The host tool call limit for this turn is reached.", False)
        if not self.sink(ToolStarted(call_id=call_id, name=name, summary=_summary(arguments))):
            return CallOutcome("The run has ended.", False)
        result: Any = _NOTHING
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                if tool.takes_caller:
                    caller = self.caller
                    if caller is not None:
                        caller = attrs.evolve(caller, call_id=call_id)
                    result = await tool.function(arguments, caller)
                else:
                    result = await tool.function(arguments)
            except anyio.get_cancelled_exc_class():
                self.sink(ToolCompleted(call_id=call_id, name=name, ok=False, summary="cancelled"))
                raise
            except HarnessError as error:
                # The contract's error is safe to show (a fixed sentence per reason, a safe
                # hint): the model learns why (a delegation refused, a limit reached).
                self.sink(ToolCompleted(call_id=call_id, name=name, ok=False, summary=error.reason))
                return CallOutcome(str(error), False)
            except Exception:
                # The tool's own error text never crosses the boundary (it may hold anything).
                self.sink(
                    ToolCompleted(call_id=call_id, name=name, ok=False, summary="tool failed")
                )
                return CallOutcome("The host tool failed.", False)
            finally:
                self._in_flight.discard(scope)
        if result is _NOTHING:  # the run ended while the tool ran
            return CallOutcome("The run has ended.", False)
        text = render(result)
        text, cut = cap(text, self.limits.max_result_bytes)
        size = len(text.encode())
        summary = f"{size} bytes" + (" (truncated)" if cut else "")
        self.sink(ToolCompleted(call_id=call_id, name=name, ok=True, summary=summary))
        return CallOutcome(text, True)


_NOTHING = object()


def _summary(arguments: Mapping[str, Any]) -> str:
    # Argument names only: values are the model's text and may be long or sensitive.
    names = [k for k in arguments if isinstance(k, str) and k.isidentifier()][:8]
    return ("arguments: " + ", ".join(names))[:200] if names else "no arguments"
