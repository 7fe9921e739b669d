"""Host hooks around tool calls, as people already write them (the Claude Agent SDK's
``PreToolUse``/``PostToolUse`` with matchers, Claude Code's hooks).

``ToolHook("before_tool", callback, tool="Bash", command="git push*")``: the callback (sync or
async) gets the :class:`~harness_hookspecs.PermissionRequest` of each matching call before it
runs and answers ``PermissionDecision.deny(reason)`` (the model reads the reason),
``PermissionDecision.allow()`` (no further question; a command-policy deny still stands),
``PermissionDecision.allow(updated_input)`` (run an edited input, where the harness can),
:data:`ASK` (ask the host's approval handler even where the posture would not), or ``None``
(no opinion: the posture decides). It is the first step of the approval seam
(:mod:`.approvals`), so it runs wherever a harness asks before a tool call.

``ToolHook("after_tool", callback, tool="Bash")``: the callback gets the ``tool.completed``
event (its ``ok`` and outcome summary) and the ``tool.started`` event before it, once both are
recorded. It runs as a task of the controller, never inside the turn: a slow hook is not a
brake; past :data:`MAX_PENDING` hooks waiting, further calls are dropped and counted.

``ToolHook("after_tool", callback, tool="Bash", adds_context=True)``: the callback's answer (a
string, or ``None`` for nothing) is context for the model's next request, as a ``PostToolUse``
hook's ``additionalContext`` is. A harness that can take it waits for it before it goes on
(Claude Code, through its hook callback on the control protocol; a one-function harness, with
``await session.after_tool_context(call_id)``), at most :data:`CONTEXT_WAIT` seconds, and the
text is cut at :data:`CONTEXT_MAX` characters. Elsewhere the hook runs off the turn as any
``after_tool`` hook, and what it answers reaches no model.

Matchers (all given must match): ``tool`` a regular expression over the whole tool name
(``"Bash|Write"``), ``kind`` the request kind, ``command`` and ``path`` shell globs.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, Literal

import anyio
import attrs
from attrs import field, frozen
from harness_hookspecs.values import Value

__all__ = [
    "ASK",
    "CONTEXT_MAX",
    "CONTEXT_WAIT",
    "MAX_PENDING",
    "AfterTool",
    "HookEvent",
    "ToolHook",
    "call",
    "of_event",
]

#: A ``before_tool`` answer: ask the host's approval handler.
ASK = "ask"
#: ``after_tool`` calls that may wait at once; more are dropped (and counted).
MAX_PENDING = 256
#: Seconds a harness waits for the context of a call's ``adds_context`` hooks.
CONTEXT_WAIT = 30.0
#: The most context the ``adds_context`` hooks add for one call, in characters.
CONTEXT_MAX = 8_000
#: Calls whose context is kept for a harness to take; older ones are forgotten.
CONTEXT_CALLS = 1_024

HookEvent = Literal["before_tool", "after_tool"]


def _pattern(value: str | None) -> str | None:
    if value is not None:
        re.compile(value)
    return value


@frozen(repr=False, eq=False)
class ToolHook(Value):
    """One host callback and the calls it is for."""

    event: str = field(validator=attrs.validators.in_(("before_tool", "after_tool")))
    callback: Callable[..., Any] = field(validator=attrs.validators.is_callable())
    tool: str | None = field(default=None, converter=_pattern)
    kind: str | None = None
    command: str | None = None
    path: str | None = None
    #: ``after_tool`` only: the answer is context for the model's next request (see above)
    adds_context: bool = False

    def matches_request(self, request: Any) -> bool:
        """Whether a permission request (``before_tool``) is one of this hook's calls."""
        if self.kind is not None and request.kind != self.kind:
            return False
        return self._matches(request.tool, request.command, request.path)

    def matches_tool(self, name: str, summary: str | None) -> bool:
        """Whether a finished tool (``after_tool``, by name and summary) is this hook's."""
        detail = None
        if summary is not None and ": " in summary:
            detail = summary.split(": ", 1)[1]
        return self._matches(name, detail, detail)

    def _matches(self, tool: str, command: str | None, path: str | None) -> bool:
        if self.tool is not None and re.fullmatch(self.tool, tool) is None:
            return False
        return _glob(command, self.command) and _glob(path, self.path)


def _glob(value: str | None, pattern: str | None) -> bool:
    """No pattern matches anything; a pattern never matches what is absent."""
    if pattern is None:
        return True
    return value is not None and fnmatch.fnmatchcase(value, pattern)


def of_event(hooks: Iterable[ToolHook], event: str) -> tuple[ToolHook, ...]:
    return tuple(hook for hook in hooks if hook.event == event)


async def call(callback: Callable[..., Any], *args: Any) -> Any:
    """A sync or async callback's answer."""
    answer = callback(*args)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


class _CallContext:
    """What the ``adds_context`` hooks of one tool call answered, and when they are done."""

    __slots__ = ("done", "running", "texts")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.running: int | None = None  # None: the call's tool.completed is not seen yet
        self.texts: list[str] = []

    def finish_one(self) -> None:
        assert self.running is not None
        self.running -= 1
        if self.running <= 0:
            self.done.set()


class AfterTool:
    """The ``after_tool`` hooks of a controller, fed every recorded event (a listener of its
    :class:`~.delivery.Delivery`); each matching call runs as a task of ``spawn``. The answers
    of ``adds_context`` hooks wait in :meth:`context_for` for the harness to take them."""

    def __init__(self, hooks: Iterable[ToolHook], spawn: Callable[[], Any]) -> None:
        self.hooks = of_event(hooks, "after_tool")
        self._spawn = spawn  # the controller's task group, when it runs
        self._started: dict[tuple[str, str], Any] = {}
        self._calls: OrderedDict[tuple[str, str], _CallContext] = OrderedDict()
        self.pending = 0
        self.dropped = 0
        self.failed = 0

    @property
    def adds_context(self) -> bool:
        """Whether any hook answers with context for the model's next request."""
        return any(hook.adds_context for hook in self.hooks)

    def __call__(self, event: Any) -> None:
        key = (event.session_id, getattr(event.payload, "call_id", ""))
        if event.type == "tool.started":
            self._started[key] = event
            return
        if event.type != "tool.completed":
            return
        started = self._started.pop(key, None)
        summary = event.payload.summary
        if started is not None and started.payload.summary:
            summary = started.payload.summary
        group = self._spawn()
        call = self._call(key) if self.adds_context else None
        running = 0
        for hook in self.hooks:
            if not hook.matches_tool(event.payload.name, summary):
                continue
            if group is None or self.pending >= MAX_PENDING:
                self.dropped += 1
                continue
            self.pending += 1
            if hook.adds_context and call is not None:
                running += 1
                group.start_soon(self._run_for_context, hook, event, started, call)
            else:
                group.start_soon(self._run, hook, event, started)
        if call is not None:
            call.running = running
            if not running:
                call.done.set()

    async def context_for(
        self, session_id: str, call_id: str, wait: float | None = None
    ) -> str | None:
        """The context the ``adds_context`` hooks answered for tool call ``call_id`` once its
        ``tool.completed`` is recorded and they are done (at most ``wait`` seconds, default
        :data:`CONTEXT_WAIT`: then what is in); ``None`` when none answered text."""
        if not self.adds_context:
            return None
        key = (session_id, call_id)
        call = self._call(key)
        with anyio.move_on_after(CONTEXT_WAIT if wait is None else wait):
            await call.done.wait()
        self._calls.pop(key, None)
        text = "\n\n".join(call.texts)
        return text[:CONTEXT_MAX] or None

    def _call(self, key: tuple[str, str]) -> _CallContext:
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _CallContext()
            while len(self._calls) > CONTEXT_CALLS:  # nobody took those: let any waiter go
                self._calls.popitem(last=False)[1].done.set()
        return call

    async def _run(self, hook: ToolHook, event: Any, started: Any) -> None:
        try:
            await call(hook.callback, event, started)
        except Exception:
            self.failed += 1
        finally:
            self.pending -= 1

    async def _run_for_context(
        self, hook: ToolHook, event: Any, started: Any, context: _CallContext
    ) -> None:
        try:
            answer = await call(hook.callback, event, started)
            if isinstance(answer, str) and answer.strip():
                context.texts.append(answer.strip())
        except Exception:
            self.failed += 1
        finally:
            self.pending -= 1
            context.finish_one()
