"""Delegation: a session's turn runs another harness as a child session, through the host.

A harness asks with the ``run_agent`` host tool (served on its loopback MCP bridge) or, for a
one-function harness, ``await session.run_agent(...)``. The host allows it
(``Controller(delegation=Delegation(...))``; off by default) and names the harnesses a session
may delegate to, each with the model and config the host opens it with. A call opens a child
session (or continues one the same parent opened) and runs one turn in it; the child's answer
(its final text, or the decision matching the call's output schema) is the call's result.

The child inherits from its parent, never wider: the agent and user (so the same credential
grants), the posture (a wider one is ``policy-refused``), the workspace (or a directory of its
own, as the host decides); its budget is carved from what the parent has left, and every usage
report it makes counts against the parent's budget as it happens (:class:`SessionLimits`): a
parent's limit crossed inside a child ends the child's turn and then the parent's, both
``turn.failed(limit-exceeded)``. Depth and fan-out are bounded, so a loop of agents stops with
a tool error the model sees. Cancelling the parent's turn cancels the child's (the call is
cancelled with the turn); closing the parent closes its children; a parent closed or resumed
in a later process closes the children a dead process left open.

The child's record and ``session.opened`` name the parent session and the parent's event that
started the child (the call's ``tool.started``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
from attrs import field, frozen
from harness_hookspecs import (
    POSTURES,
    TARGETS,
    Event,
    HarnessError,
    HostTool,
    LedgerStore,
    OpenSessionRequest,
    SessionRecord,
    SessionRef,
    ToolCompleted,
    ToolStarted,
    Usage,
    UsageReported,
)
from harness_hookspecs.host_tools import ToolCaller

from .budgets import Budget, SessionLimits, add_usage
from .delegation_calls import CALL_NAMES, FUNCTION_TOOL_NAME, TOOL_NAME
from .dispatch import DIRECT_SANDBOX
from .turn import LiveSession, TurnResult

__all__ = [
    "TOOL_NAME",
    "ChildAnswer",
    "ChildProfile",
    "Delegation",
    "children_of",
    "delegation_tool",
    "run_agent",
]

DEFAULT_MAX_DEPTH = 2
DEFAULT_MAX_FAN_OUT = 4
WORKSPACE_POLICIES = ("parent", "own")
#: Postures from narrowest to widest: a child's may not come later than its parent's.
_POSTURE_RANK = {name: rank for rank, name in enumerate(("strict", "auto", "dangerous"))}
assert set(_POSTURE_RANK) == set(POSTURES)
_PROMPT_MAX = 100_000


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive whole number")


def _profiles(value: Any) -> Mapping[str, ChildProfile]:
    if not isinstance(value, Mapping):
        raise ValueError("harnesses must map harness names to ChildProfile")
    profiles = {}
    for name, profile in value.items():
        if not isinstance(name, str) or not name:
            raise ValueError("harnesses must map harness names to ChildProfile")
        if isinstance(profile, Mapping):
            profile = ChildProfile(**profile)
        if not isinstance(profile, ChildProfile):
            raise ValueError("harnesses must map harness names to ChildProfile")
        profiles[name] = profile
    return profiles


@frozen
class ChildProfile:
    """How the host opens a child session of one harness: its target, model and config (the
    child's own: a CLI path, a base URL...). Agent, user, posture and workspace come from the
    parent."""

    target: str = field(default="local", validator=attrs.validators.in_(TARGETS))
    model: str | None = None
    config: Mapping[str, Any] = field(factory=dict, converter=dict)


@frozen
class Delegation:
    """The host's delegation settings (``Controller(delegation=...)``).

    :param harnesses: the harnesses a session may delegate to, each with its
        :class:`ChildProfile` (a harness not named here is refused: ``invalid-request``).
    :param max_depth: how deep a chain of children may go (a top-level session is depth 0;
        a session at ``max_depth`` cannot delegate: ``limit-exceeded``).
    :param max_fan_out: how many child sessions one session may open.
    :param workspace: ``parent``: the child works in its parent's workspace; ``own``: in a new
        directory of its own (under the controller's state directory).
    """

    harnesses: Mapping[str, ChildProfile] = field(converter=_profiles)
    max_depth: int = field(default=DEFAULT_MAX_DEPTH, validator=_positive)
    max_fan_out: int = field(default=DEFAULT_MAX_FAN_OUT, validator=_positive)
    workspace: str = field(default="parent", validator=attrs.validators.in_(WORKSPACE_POLICIES))


@frozen
class ChildAnswer:
    """What one delegated turn gave back."""

    #: the child session (pass it as ``session`` to continue the same child)
    session_id: str
    turn_id: str
    #: ``completed``, ``failed`` or ``cancelled``
    status: str
    text: str | None = None
    #: the decision matching the call's output schema
    output: Any = None
    #: the fixed reason of a failed child turn
    reason: str | None = None
    usage: Usage | None = None

    def as_tool_result(self) -> dict[str, Any]:
        """What the calling model sees."""
        result: dict[str, Any] = {
            "session": self.session_id,
            "status": self.status,
            "answer": self.text,
        }
        if self.output is not None:
            result["output"] = self.output
        if self.reason is not None:
            result["reason"] = self.reason
        return result


class Delegator(Protocol):
    """What delegation needs from the controller (a protocol: no import circle)."""

    ledger: LedgerStore
    delegation: Delegation | None
    state_root: Path
    live_sessions: dict[str, LiveSession]
    clock: Any

    def live(self, session: Any) -> LiveSession: ...

    async def open_child(
        self, request: OpenSessionRequest, budget: Budget, parent: LiveSession, started_by: str
    ) -> LiveSession: ...

    async def run_turn(
        self,
        session: SessionRef | str,
        prompt: str,
        *,
        output_schema: Mapping[str, Any] | None = None,
    ) -> TurnResult: ...


async def run_agent(
    controller: Delegator,
    parent: LiveSession,
    harness: str,
    prompt: str,
    *,
    output_schema: Mapping[str, Any] | None = None,
    posture: str | None = None,
    session: str | None = None,
    started_by: str,
) -> ChildAnswer:
    """Run one turn of ``harness`` as a child of ``parent`` (whose running turn asks, by its
    event ``started_by``), or of its child ``session``; see the module. Refusals raise
    ``HarnessError`` before anything is opened."""
    settings = controller.delegation
    if settings is None:
        raise HarnessError("policy-refused", "the host does not allow delegation")
    if parent.closed:
        raise HarnessError("session-closed", f"session {parent.ref.session_id} is closed")
    turn = parent.active
    if turn is None:
        raise HarnessError("turn-not-found", "delegation runs inside a turn of the parent")
    if not isinstance(prompt, str) or not 1 <= len(prompt) <= _PROMPT_MAX:
        raise HarnessError("invalid-request", "the prompt must be 1-100000 characters")
    if output_schema is not None and not isinstance(output_schema, Mapping):
        raise HarnessError("invalid-request", "output_schema must be a JSON Schema object")
    child = _continued(controller, parent, session, harness) if session is not None else None
    if child is None:
        request = _child_request(controller, settings, parent, harness, posture)
        if parent.depth + 1 > settings.max_depth:
            raise HarnessError("limit-exceeded", f"delegation depth {settings.max_depth} reached")
        if len(parent.children) >= settings.max_fan_out:
            raise HarnessError(
                "limit-exceeded", f"delegation fan-out {settings.max_fan_out} reached"
            )
    now = controller.clock()
    spent = parent.limits.spent(now)
    if spent is not None:
        raise HarnessError("limit-exceeded", spent)
    if child is None:
        budget = carve(parent.limits, None, now)
        child = await controller.open_child(request, budget, parent, started_by)
    else:
        child.limits.budget = carve(parent.limits, child.limits.total, now)
    result = await controller.run_turn(child.ref.session_id, prompt, output_schema=output_schema)
    over = parent.limits.spent(controller.clock())
    if over is not None:
        # The parent's budget was spent inside the child: the parent's turn ends too.
        turn.stop_over_budget(over)
        raise HarnessError("limit-exceeded", over)
    return ChildAnswer(
        session_id=child.ref.session_id,
        turn_id=result.turn_id,
        status=result.status,
        text=result.text,
        output=result.output,
        reason=result.reason,
        usage=result.usage,
    )


def _continued(
    controller: Delegator, parent: LiveSession, session: str, harness: str
) -> LiveSession:
    """The open child ``session`` of ``parent`` (for ``harness``) a call continues."""
    if session not in parent.children:
        raise HarnessError("invalid-request", f"{session[:80]!r} is not a child of this session")
    child = controller.live_sessions.get(session)
    if child is None or child.closed:
        raise HarnessError("session-closed", f"session {session[:80]} is closed")
    if child.ref.harness != harness:
        raise HarnessError("invalid-request", f"session {session[:80]} runs another harness")
    return child


def _child_request(
    controller: Delegator,
    settings: Delegation,
    parent: LiveSession,
    harness: str,
    posture: str | None,
) -> OpenSessionRequest:
    """The child's open request: the host's profile of ``harness``, the parent's agent, user,
    posture (or a narrower one) and workspace (or its own)."""
    profile = settings.harnesses.get(harness) if isinstance(harness, str) else None
    if profile is None:
        raise HarnessError("invalid-request", f"unknown harness {str(harness)[:80]!r}")
    if parent.sandbox.provider != DIRECT_SANDBOX:
        # The child would run outside the parent's sandbox (its provider, network policy):
        # refused until children inherit the sandbox, never silently wider.
        raise HarnessError("policy-refused", "a sandboxed session cannot delegate yet")
    ceiling = parent.context.posture
    if posture is None:
        posture = ceiling
    elif posture not in _POSTURE_RANK:
        raise HarnessError("invalid-request", f"unknown posture {str(posture)[:40]!r}")
    elif _POSTURE_RANK[posture] > _POSTURE_RANK.get(ceiling, 0):
        raise HarnessError(
            "policy-refused", f"posture {posture} is wider than the parent's {ceiling}"
        )
    record: SessionRecord | None = controller.ledger.get_session(parent.ref.session_id)
    workspace = parent.context.workspace
    if settings.workspace == "own":
        workspace = _own_workspace(controller.state_root, parent, len(parent.children))
    try:
        return OpenSessionRequest(
            harness=harness,
            target=profile.target,
            workspace=workspace,
            model=profile.model,
            posture=posture,
            agent=record.agent if record is not None else None,
            user=record.user if record is not None else None,
            config=profile.config,
            # a parent that keeps thinking out of the ledger keeps its children's out too
            record_thinking=parent.record_thinking,
        )
    except (TypeError, ValueError):
        raise HarnessError("invalid-request", f"the profile of {harness} is invalid") from None


def _own_workspace(root: Path, parent: LiveSession, index: int) -> str:
    path = root / "children" / parent.ref.session_id / str(index + 1)
    os.makedirs(path, exist_ok=True)
    return str(path)


_CARVED = (
    ("max_cost_usd", "cost_usd"),
    ("max_tokens", None),
    ("max_input_tokens", "input_tokens"),
    ("max_output_tokens", "output_tokens"),
)


def carve(parent: SessionLimits, used_by_child: Usage | None, now: float) -> Budget:
    """The child's budget: what each of the parent's limits (its ancestors' too) has left,
    plus what the child already used of it (a continued child's usage is in both totals)."""
    values: dict[str, Any] = {}
    limits: SessionLimits | None = parent
    while limits is not None:
        budget = limits.budget
        for limit, usage_field in _CARVED:
            ceiling = getattr(budget, limit)
            if ceiling is None:
                continue
            left = ceiling - _used(limits.total, usage_field) + _used(used_by_child, usage_field)
            values[limit] = min(values.get(limit, math.inf), left)
        if budget.max_wall_clock is not None:
            left_clock = budget.max_wall_clock - (now - limits.started)
            values["max_wall_clock"] = min(values.get("max_wall_clock", math.inf), left_clock)
        limits = limits.parent
    for name, value in values.items():
        if value <= 0:
            raise HarnessError("limit-exceeded", f"{name} of the parent is spent")
        if name not in ("max_cost_usd", "max_wall_clock"):
            values[name] = int(value)
    return Budget(**values)


def _used(usage: Usage | None, name: str | None) -> float:
    if usage is None:
        return 0
    if name is None:
        return (usage.input_tokens or 0) + (usage.output_tokens or 0)
    return getattr(usage, name) or 0


_TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "harness": {"type": "string", "description": "the harness to run (as the host names it)"},
        "prompt": {"type": "string", "description": "what to ask it"},
        "output_schema": {
            "type": "object",
            "description": "a JSON Schema its answer must match (optional)",
        },
        "posture": {
            "type": "string",
            "enum": list(_POSTURE_RANK),
            "description": "its posture (optional; never wider than yours)",
        },
        "session": {
            "type": "string",
            "description": "continue a child session an earlier call returned (optional)",
        },
    },
    "required": ["harness", "prompt"],
}


def delegation_tool(controller: Delegator) -> HostTool:
    """The ``run_agent`` host tool a session's bridge serves when the host allows delegation."""
    settings = controller.delegation
    names = ", ".join(sorted(settings.harnesses)) if settings is not None else ""

    async def call(arguments: Mapping[str, Any], caller: ToolCaller) -> dict[str, Any]:
        parent = controller.live(caller.session_id)
        turn = parent.active
        if turn is None or turn.turn_id != caller.turn_id:
            raise HarnessError("turn-not-found", "the calling turn has ended")
        answer = await run_agent(
            controller,
            parent,
            arguments.get("harness"),  # type: ignore[arg-type]  # checked there
            arguments.get("prompt"),  # type: ignore[arg-type]
            output_schema=arguments.get("output_schema"),
            posture=arguments.get("posture"),
            session=_optional_str(arguments.get("session")),
            started_by=_call_event(turn.events, caller.call_id),
        )
        return answer.as_tool_result()

    return HostTool(
        name=TOOL_NAME,
        description=("Run another agent harness on a task and get its answer. Harnesses: " + names)[
            :2000
        ],
        function=call,
        input_schema=_TOOL_SCHEMA,
    )


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise HarnessError("invalid-request", "session must be a session id")
    return value


def _call_event(events: Sequence[Event], call_id: str | None) -> str:
    """The id of the turn's ``tool.started`` of bridge call ``call_id``."""
    for event in reversed(events):
        payload = event.payload
        if isinstance(payload, ToolStarted) and payload.call_id == call_id:
            return event.event_id
    raise HarnessError("turn-not-found", "the call is not in the turn's record")


async def run_agent_in_turn(
    controller: Delegator,
    session_id: str,
    harness: str,
    prompt: str,
    *,
    output_schema: Mapping[str, Any] | None = None,
    posture: str | None = None,
    session: str | None = None,
) -> ChildAnswer:
    """``session.run_agent(...)`` of a one-function harness: the call is recorded in the
    parent's running turn as a ``tool.started``/``tool.completed`` pair named ``run_agent``
    (the first is the event that started the child)."""
    parent = controller.live(session_id)
    turn = parent.active
    if turn is None:
        raise HarnessError("turn-not-found", "delegation runs inside a turn of the parent")
    call_id = f"agent_{len(parent.children) + 1}_{len(turn.events)}"
    if not turn.record_side_event(
        ToolStarted(call_id=call_id, name=FUNCTION_TOOL_NAME, summary=f"harness {harness}"[:200])
    ):
        raise HarnessError("turn-not-found", "the calling turn has ended")
    started_by = turn.events[-1].event_id
    ok, summary = False, "failed"
    try:
        answer = await run_agent(
            controller,
            parent,
            harness,
            prompt,
            output_schema=output_schema,
            posture=posture,
            session=session,
            started_by=started_by,
        )
        ok, summary = answer.status == "completed", f"child {answer.status}"
        return answer
    except HarnessError as error:
        summary = error.reason
        raise
    finally:
        turn.record_side_event(
            ToolCompleted(call_id=call_id, name=FUNCTION_TOOL_NAME, ok=ok, summary=summary)
        )


def delegated(events: Sequence[Event]) -> bool:
    """Whether a session's events hold a delegation call: only then can it have children
    (so a resume or close looks for them in the ledger only then)."""
    return any(
        event.type == "tool.started" and getattr(event.payload, "name", None) in CALL_NAMES
        for event in events
    )


def count_children(
    limits: SessionLimits, ledger: LedgerStore, session_id: str, events: Sequence[Event]
) -> bool:
    """For a session being resumed (its ``events``): add what its children spent to its
    total, which its budget binds. Whether it has delegated."""
    if not delegated(events):
        return False
    limits.total = add_usage(limits.total, descendants_usage(ledger, session_id))
    return True


def descendants_usage(ledger: LedgerStore, session_id: str) -> Usage | None:
    """What the child sessions of ``session_id`` (and theirs) reported, summed: a resumed
    parent's budget binds on it too."""
    total: Usage | None = None
    for record in children_of(ledger, session_id):
        for event in ledger.events(record.session_id):
            if isinstance(event.payload, UsageReported):
                total = add_usage(total, event.payload.usage)
        total = add_usage(total, descendants_usage(ledger, record.session_id))
    return total


def children_of(ledger: LedgerStore, session_id: str) -> list[SessionRecord]:
    """The child sessions the ledger records for ``session_id``, oldest first."""
    records = [r for r in ledger.list_sessions() if r.parent_session_id == session_id]
    return sorted(records, key=lambda r: r.created_at)
