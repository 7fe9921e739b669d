"""The approval seam's runtime side: who answers ``context.request_permission(request)``.

In order:

0. the host's ``before_tool`` hooks (:mod:`.tool_hooks`): a deny stands; an allow skips the
   asking (a command-policy deny still stands); :data:`~.tool_hooks.ASK` asks the host even
   where the posture would allow;
1. the posture: ``dangerous`` allows without asking; ``auto`` runs the command policy
   (:mod:`harness_core.command_policy`), whose ``allow``/``deny`` verdicts answer at once
   (``source="policy"``) and whose ``ask`` verdict goes on like ``strict`` (its reason kept
   for the deny of step 4, so the model reads why);
2. the host's handler given to the ``Controller`` (``source="host"``), unless it returns ``None``
   (a remote approver whose own timer ran out, the Temporal executor's workflow, denies with
   ``source="timeout"``, kept as such);
3. the ``harness_permission_decide`` hook, policy plugins (``source="policy"``);
4. the posture's default: a deny (``source="policy"``): nobody allowed the call.

Steps 2-4 run under the approval timeout; no answer in time is a deny with ``source="timeout"``.
Every request is recorded as ``permission.requested`` and its answer as ``permission.resolved``
in the running turn. A handler that fails, or answers with something that is not a
:class:`PermissionDecision`, denies (never allows by accident).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from harness_hookspecs import (
    HarnessError,
    Payload,
    PermissionDecision,
    PermissionHandler,
    PermissionRequest,
    PermissionRequested,
    PermissionResolved,
)

from .tool_hooks import ASK, ToolHook
from .tool_hooks import call as call_hook

if TYPE_CHECKING:
    from .command_policy import CommandPolicy

__all__ = ["DEFAULT_PERMISSION_TIMEOUT", "Approvals", "PendingApprovals", "builtin_policy"]

#: Seconds a request waits for an answer when the controller names none.
DEFAULT_PERMISSION_TIMEOUT = 300.0

Recorder = Callable[[Payload], Any]


@functools.cache
def builtin_policy() -> CommandPolicy:
    """The built-in command policy, built on the first command a posture checks (its rules
    are compiled then, not when ``harness run`` starts)."""
    from .command_policy import CommandPolicy

    return CommandPolicy()


@attrs.define
class Approvals:
    """One per controller: the host's handler, the command policy and the timeout."""

    handler: PermissionHandler | None = None
    timeout: float = DEFAULT_PERMISSION_TIMEOUT
    #: the ``auto`` posture's command policy; ``None``: the built-in rules (:func:`builtin_policy`)
    policy: CommandPolicy | None = None
    hook: Any = None
    #: the host's :class:`~.tool_hooks.ToolHook` s (``before_tool`` ones answer first)
    hooks: tuple[ToolHook, ...] = ()

    async def resolve(
        self,
        request: PermissionRequest,
        context: Any,
        record: Recorder | None = None,
    ) -> PermissionDecision:
        """Answer ``request`` for the session ``context`` and record both sides."""
        if record is not None:
            record(
                PermissionRequested(
                    request_id=request.request_id, summary=request.summary, tool=request.tool
                )
            )
        decision = await self._decide(request, context)
        if decision.updated_input is not None and not request.can_edit:
            decision = attrs.evolve(
                decision,
                behavior="deny",
                updated_input=None,
                reason="the harness cannot run an edited input",
            )
        if record is not None:
            record(
                PermissionResolved(
                    request_id=request.request_id,
                    decision=decision.behavior,
                    source=decision.source,
                    reason=decision.reason,
                    edited=decision.updated_input is not None,
                )
            )
        return decision

    async def _decide(self, request: PermissionRequest, context: Any) -> PermissionDecision:
        hooked: PermissionDecision | str | None = None
        if self.hooks:
            hooked = _HOOK_TIMED_OUT
            with anyio.move_on_after(self.timeout):
                hooked = await self._before_tool(request)
            if isinstance(hooked, PermissionDecision) and not hooked.allowed:
                return hooked  # a hook's deny (or its timeout) stands, whatever the posture
        posture = getattr(context, "posture", "strict")
        if posture == "dangerous":
            return PermissionDecision("allow", source="policy")
        asked_because = None
        if posture == "auto":
            verdict, why = self._policy_for(context).verdict(
                request, getattr(context, "workspace", None)
            )
            if verdict == "deny":
                return PermissionDecision("deny", reason=why, source="policy")
            if verdict == "allow" and hooked != ASK:
                if isinstance(hooked, PermissionDecision):
                    return hooked
                return PermissionDecision("allow", source="policy")
            asked_because = why
        if isinstance(hooked, PermissionDecision):
            return hooked  # the host's hook allowed it: nobody else is asked
        with anyio.move_on_after(self.timeout):
            return await self._ask(request, context, asked_because)
        return PermissionDecision("deny", reason="no answer in time", source="timeout")

    async def _before_tool(self, request: PermissionRequest) -> PermissionDecision | str | None:
        """The first matching ``before_tool`` hook's answer (a decision, :data:`ASK`, or
        ``None``); a hook that fails or answers something else denies."""
        for hook in self.hooks:
            if hook.event != "before_tool" or not hook.matches_request(request):
                continue
            try:
                answer = await call_hook(hook.callback, request)
            except Exception:
                return PermissionDecision("deny", reason="a before_tool hook failed", source="host")
            if answer is None:
                continue
            if answer == ASK:
                return ASK
            if isinstance(answer, PermissionDecision):
                return attrs.evolve(answer, source="host")
            return PermissionDecision("deny", reason="a before_tool hook failed", source="host")
        return None

    def _policy_for(self, context: Any) -> CommandPolicy:
        """The session's own ``command_policy`` config, else the controller's."""
        config = getattr(context, "config", None) or {}
        if config.get("command_policy") is None:
            return self.policy or builtin_policy()
        from .command_policy import CommandPolicy

        try:
            return CommandPolicy.from_config(config["command_policy"])
        except HarnessError:
            return CommandPolicy(default="deny")

    async def _ask(
        self, request: PermissionRequest, context: Any, because: str | None = None
    ) -> PermissionDecision:
        """The host, then policy plugins; with no answer a deny whose reason says why the
        command policy asked (``because``), so the model reads it."""
        if self.handler is not None:
            answer = await answer_of(lambda: self.handler(request))  # type: ignore[misc]
            if answer is not None:
                # a remote approver's own timer (the Temporal workflow's) denies as a timeout;
                # anything else a handler answers is the host's
                timed_out = answer.source == "timeout" and not answer.allowed
                return attrs.evolve(answer, source="timeout" if timed_out else "host")
        if self.hook is not None:
            answer = await answer_of(
                lambda: self.hook.harness_permission_decide(request=request, context=context)
            )
            if answer is not None:
                return attrs.evolve(answer, source="policy")
        nobody = "no approver allowed the call"
        reason = f"{because}; {nobody}" if because else nobody
        return PermissionDecision("deny", reason=reason[:200], source="policy")


_FAILED = PermissionDecision("deny", reason="the approver failed")
_HOOK_TIMED_OUT = PermissionDecision("deny", reason="no answer in time", source="timeout")


async def answer_of(call: Callable[[], Any]) -> PermissionDecision | None:
    """Call an approver (sync or async); a failure or a foreign answer is a deny."""
    try:
        answer = call()
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        return _FAILED
    if answer is None or isinstance(answer, PermissionDecision):
        return answer
    return _FAILED


class PendingApprovals:
    """A host handler that parks each request until someone answers it by id (``harness
    serve``'s approve endpoint, a UI): pass the instance as the controller's
    ``permission_handler``. Unanswered requests are denied by the approval timeout."""

    def __init__(self, on_request: Callable[[PermissionRequest], Any] | None = None) -> None:
        self.on_request = on_request
        self._waiting: dict[tuple[str | None, str], _Slot] = {}

    async def __call__(self, request: PermissionRequest) -> PermissionDecision | None:
        slot = _Slot(request)
        key = (request.session_id, request.request_id)
        self._waiting[key] = slot
        try:
            if self.on_request is not None:
                self.on_request(request)
            await slot.answered.wait()
            return slot.decision
        finally:
            if self._waiting.get(key) is slot:
                del self._waiting[key]

    def pending(self, session_id: str | None = None) -> list[PermissionRequest]:
        return [
            slot.request
            for (session, _), slot in self._waiting.items()
            if session_id is None or session == session_id
        ]

    def answer(self, session_id: str | None, request_id: str, decision: PermissionDecision) -> bool:
        """Answer a waiting request; ``False`` when none waits under that id."""
        slot = self._waiting.get((session_id, request_id))
        if slot is None or slot.answered.is_set():
            return False
        slot.decision = decision
        slot.answered.set()
        return True


class _Slot:
    def __init__(self, request: PermissionRequest) -> None:
        self.request = request
        self.answered = anyio.Event()
        self.decision: PermissionDecision | None = None
