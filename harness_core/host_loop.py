"""The host loop: a harness taking part in a host's agent loop the way a model call does.

Each iteration runs one turn with the host's JSON Schema, hands the parsed decision (the
``turn.completed`` event's ``output``) to the host's ``execute`` callback, and - unless the
decision is terminal - resumes the same session with what ``execute`` returned as the next turn's
input. The next turn's ``turn.started`` names the previous turn's ``turn.completed`` as its
``parent_event_id``, so the ledger shows each step linked to the decision it answers::

    async def execute(decision):          # the host's own machinery: approvals, accounting
        return {"results": [run(action) for action in decision["actions"]]}

    loop = await host_loop(controller, ref, "fix the build", schema=SCHEMA, execute=execute,
                           is_terminal=lambda d: d["step"] == "done", max_iterations=5)
    loop.status      # "done" | "budget" | "failed"
    loop.decision    # the last decision

With ``execute_action`` instead of ``execute`` the loop runs the decision's actions one by one,
each through the host's **approval seam** first (the controller's ``permission_handler``, the
policy hook, the session's posture and command policy - what a harness's own tool calls go
through): an allowed action runs, a denied one is not run and comes back to the harness as a
result saying so::

    async def run(action):                 # only called for actions the approver allowed
        return subprocess_run(action)

    loop = await host_loop(controller, ref, "fix the build", schema=SCHEMA, execute_action=run)
    # next turn's input: {"results": [{"action": "make", "ok": true, "result": ...},
    #                                  {"action": "rm -rf /", "ok": false, "denied": "..."}]}

Each action becomes a :class:`~harness_hookspecs.PermissionRequest` (``describe_action``; by
default a string action is the request's ``command``, a mapping gives ``tool``/``command``/
``path``), with the session and the deciding turn filled in, so a ``PendingApprovals`` UI shows
it like any other request. The decisions are kept on each :class:`LoopStep` (``approvals``) and
reach the ledger in the next turn's input (they fall between turns, so they are not
``permission.*`` events of their own).

The loop stops on a terminal decision, after ``max_iterations`` turns (``budget``), when the
session's budget is spent (``budget``: a turn refused or ended ``limit-exceeded``; the limit is
in ``loop.reason``), or when a turn does not complete (``failed``: its reason is in
``loop.reason``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from attrs import field, frozen
from harness_hookspecs import HarnessError, PermissionDecision, PermissionRequest, SessionRef

from .budgets import DEFAULT_OUTPUT_RETRIES

if TYPE_CHECKING:
    from .controller import Controller
    from .turn import TurnResult

__all__ = [
    "ACTION_TOOL",
    "LoopResult",
    "LoopStep",
    "default_actions",
    "default_is_terminal",
    "describe_action",
    "host_loop",
    "results_prompt",
    "run_actions",
]

#: The decision schema of the README's example (and the default ``is_terminal``): a turn ends
#: with ``{"step": "actions", "actions": [...]}`` or ``{"step": "done", "answer": ...}``.
STEP_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "step": {"enum": ["actions", "done"]},
        "actions": {"type": "array", "items": {"type": "string"}},
        "answer": {"type": "string"},
    },
    "required": ["step"],
    "additionalProperties": False,
}

#: The host's action executor: a decision in, the results for the next turn out.
Execute = Callable[[Any], Any | Awaitable[Any]]
#: One allowed action in, its result out (``execute_action``).
ExecuteAction = Callable[[Any], Any | Awaitable[Any]]
#: The tool name of an action's permission request when the action names none.
ACTION_TOOL = "host_action"


@frozen
class LoopStep:
    """One iteration: the turn and the decision it ended with (and what executing it gave)."""

    #: the deciding turn's result
    turn: TurnResult
    #: the turn's schema-valid decision (``turn.output``)
    decision: Any
    #: what executing the decision gave (the next turn's input); ``None`` for the last step
    results: Any = None
    #: per action, the approval seam's decision (``execute_action`` only)
    approvals: tuple[PermissionDecision, ...] = ()


@frozen
class LoopResult:
    """What :func:`host_loop` returns: how the loop ended and every step it took."""

    #: ``done`` (a terminal decision), ``budget`` (``max_iterations`` reached, or the session
    #: budget refused or ended a turn) or ``failed`` (a turn did not complete)
    status: str
    #: the iterations, in order
    steps: tuple[LoopStep, ...] = field(default=())
    #: why it stopped short: a failed turn's reason, or the limit that was spent
    reason: str | None = None

    @property
    def decision(self) -> Any:
        """The last step's decision (``None`` before any step)."""
        return self.steps[-1].decision if self.steps else None


def default_is_terminal(decision: Any) -> bool:
    """``{"step": "done", ...}`` ends the loop (the README's schema)."""
    return isinstance(decision, Mapping) and decision.get("step") == "done"


def default_actions(decision: Any) -> list[Any]:
    """The decision's ``actions`` list (the README's schema); none when it has no list."""
    actions = decision.get("actions") if isinstance(decision, Mapping) else None
    return list(actions) if isinstance(actions, list) else []


def describe_action(action: Any) -> PermissionRequest:
    """An action as the approval seam sees it: a string is a command; a mapping may name its
    ``tool``, ``command`` and ``path`` (and is the request's editable ``input``)."""
    if isinstance(action, Mapping):
        command, path = action.get("command"), action.get("path")
        tool = action.get("tool")
        try:
            data = json.loads(json.dumps(action))
        except (TypeError, ValueError):
            data = {}
        return PermissionRequest.for_tool(
            tool if isinstance(tool, str) and tool else ACTION_TOOL,
            kind="shell" if isinstance(command, str) else "other",
            command=command if isinstance(command, str) else None,
            path=path if isinstance(path, str) else None,
            input=data,
        )
    text = action if isinstance(action, str) else json.dumps(action, default=str)
    return PermissionRequest.for_tool(ACTION_TOOL, command=text)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def run_actions(
    controller: Controller,
    session: SessionRef | str,
    turn: TurnResult,
    actions: list[Any],
    execute_action: ExecuteAction,
    describe: Callable[[Any], PermissionRequest] = describe_action,
) -> tuple[dict[str, Any], tuple[PermissionDecision, ...]]:
    """Ask the approval seam about each action of ``turn``'s decision, run the allowed ones;
    the results for the next turn (denied actions say so, with the approver's reason)."""
    live = controller.live(session)
    results: list[dict[str, Any]] = []
    decisions: list[PermissionDecision] = []
    for action in actions:
        request = attrs.evolve(
            describe(action), session_id=live.ref.session_id, turn_id=turn.turn_id
        )
        decision = await controller.approvals.resolve(request, live.context)
        decisions.append(decision)
        if not decision.allowed:
            reason = decision.reason or "denied by the host"
            results.append({"action": action, "ok": False, "denied": reason})
            continue
        try:
            result = await _maybe_await(execute_action(action))
        except Exception as error:
            # The host's failure, as it chose to word it (a HarnessError's hint), else fixed.
            hint = error.hint if isinstance(error, HarnessError) and error.hint else None
            results.append({"action": action, "ok": False, "error": hint or "the action failed"})
            continue
        results.append({"action": action, "ok": True, "result": result})
    return {"results": results}, tuple(decisions)


def results_prompt(results: Any) -> str:
    """The next turn's input: the action results as JSON, introduced in one line."""
    text = results if isinstance(results, str) else json.dumps(results, ensure_ascii=False)
    return f"The host executed your actions. Results:\n{text}"


async def host_loop(
    controller: Controller,
    session: SessionRef | str,
    prompt: str,
    *,
    schema: Mapping[str, Any],
    execute: Execute | None = None,
    execute_action: ExecuteAction | None = None,
    actions: Callable[[Any], list[Any]] = default_actions,
    describe: Callable[[Any], PermissionRequest] = describe_action,
    is_terminal: Callable[[Any], bool] = default_is_terminal,
    max_iterations: int = 10,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
    timeout: float | None = None,
) -> LoopResult:
    """Run decide -> execute -> resume until a terminal decision or the budget (see module).
    Give ``execute`` (the whole decision, the host's own machinery) or ``execute_action`` (each
    action of ``actions(decision)``, asked through the approval seam first)."""
    if max_iterations < 1:
        raise HarnessError("invalid-request", "max_iterations must be at least 1")
    if (execute is None) == (execute_action is None):
        raise HarnessError("invalid-request", "give the host loop execute or execute_action")
    steps: list[LoopStep] = []
    parent: str | None = None
    for _ in range(max_iterations):
        try:
            turn = await controller.run_turn(
                session,
                prompt,
                output_schema=schema,
                output_retries=output_retries,
                parent_event_id=parent,
                timeout=timeout,
            )
        except HarnessError as error:
            if error.reason != "limit-exceeded":
                raise
            return LoopResult(status="budget", steps=tuple(steps), reason=error.hint)
        if not turn.ok:
            steps.append(LoopStep(turn=turn, decision=None))
            if turn.reason == "limit-exceeded":
                hint = getattr(turn.events[-1].payload, "hint", None) if turn.events else None
                return LoopResult(status="budget", steps=tuple(steps), reason=hint)
            return LoopResult(status="failed", steps=tuple(steps), reason=turn.reason)
        decision = turn.output
        if is_terminal(decision):
            steps.append(LoopStep(turn=turn, decision=decision))
            return LoopResult(status="done", steps=tuple(steps))
        approvals: tuple[PermissionDecision, ...] = ()
        if execute_action is not None:
            results, approvals = await run_actions(
                controller, session, turn, actions(decision), execute_action, describe
            )
        else:
            assert execute is not None
            results = await _maybe_await(execute(decision))
        steps.append(LoopStep(turn=turn, decision=decision, results=results, approvals=approvals))
        prompt = results_prompt(results)
        parent = turn.events[-1].event_id  # the decision this input answers
    return LoopResult(status="budget", steps=tuple(steps))
