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

Matchers (all given must match): ``tool`` a regular expression over the whole tool name
(``"Bash|Write"``), ``kind`` the request kind, ``command`` and ``path`` shell globs.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs
from attrs import field, frozen

#: A ``before_tool`` answer: ask the host's approval handler.
ASK = "ask"
#: ``after_tool`` calls that may wait at once; more are dropped (and counted).
MAX_PENDING = 256

HookEvent = Literal["before_tool", "after_tool"]


def _pattern(value: str | None) -> str | None:
    if value is not None:
        re.compile(value)
    return value


@frozen
class ToolHook:
    """One host callback and the calls it is for."""

    event: str = field(validator=attrs.validators.in_(("before_tool", "after_tool")))
    callback: Callable[..., Any] = field(validator=attrs.validators.is_callable())
    tool: str | None = field(default=None, converter=_pattern)
    kind: str | None = None
    command: str | None = None
    path: str | None = None

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


class AfterTool:
    """The ``after_tool`` hooks of a controller, fed every recorded event (a listener of its
    :class:`~.delivery.Delivery`); each matching call runs as a task of ``spawn``."""

    def __init__(self, hooks: Iterable[ToolHook], spawn: Callable[[], Any]) -> None:
        self.hooks = of_event(hooks, "after_tool")
        self._spawn = spawn  # the controller's task group, when it runs
        self._started: dict[tuple[str, str], Any] = {}
        self.pending = 0
        self.dropped = 0
        self.failed = 0

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
        for hook in self.hooks:
            if not hook.matches_tool(event.payload.name, summary):
                continue
            if group is None or self.pending >= MAX_PENDING:
                self.dropped += 1
                continue
            self.pending += 1
            group.start_soon(self._run, hook, event, started)

    async def _run(self, hook: ToolHook, event: Any, started: Any) -> None:
        try:
            await call(hook.callback, event, started)
        except Exception:
            self.failed += 1
        finally:
            self.pending -= 1
