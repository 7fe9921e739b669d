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

The loop stops on a terminal decision, after ``max_iterations`` turns (``budget``), or when a
turn does not complete (``failed``: its reason is in ``loop.reason``).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import field, frozen
from harness_hookspecs import HarnessError, SessionRef

from .turn_protocol import DEFAULT_OUTPUT_RETRIES

if TYPE_CHECKING:
    from .controller import Controller
    from .turn import TurnResult

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


@frozen
class LoopStep:
    """One iteration: the turn and the decision it ended with (and what executing it gave)."""

    turn: TurnResult
    decision: Any
    results: Any = None


@frozen
class LoopResult:
    status: str  # done | budget | failed
    steps: tuple[LoopStep, ...] = field(default=())
    reason: str | None = None

    @property
    def decision(self) -> Any:
        return self.steps[-1].decision if self.steps else None


def default_is_terminal(decision: Any) -> bool:
    """``{"step": "done", ...}`` ends the loop (the README's schema)."""
    return isinstance(decision, Mapping) and decision.get("step") == "done"


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
    execute: Execute,
    is_terminal: Callable[[Any], bool] = default_is_terminal,
    max_iterations: int = 10,
    output_retries: int = DEFAULT_OUTPUT_RETRIES,
    timeout: float | None = None,
) -> LoopResult:
    """Run decide -> execute -> resume until a terminal decision or the budget (see module)."""
    if max_iterations < 1:
        raise HarnessError("invalid-request", "max_iterations must be at least 1")
    steps: list[LoopStep] = []
    parent: str | None = None
    for _ in range(max_iterations):
        turn = await controller.run_turn(
            session,
            prompt,
            output_schema=schema,
            output_retries=output_retries,
            parent_event_id=parent,
            timeout=timeout,
        )
        if not turn.ok:
            steps.append(LoopStep(turn=turn, decision=None))
            return LoopResult(status="failed", steps=tuple(steps), reason=turn.reason)
        decision = turn.output
        if is_terminal(decision):
            steps.append(LoopStep(turn=turn, decision=decision))
            return LoopResult(status="done", steps=tuple(steps))
        results = execute(decision)
        if inspect.isawaitable(results):
            results = await results
        steps.append(LoopStep(turn=turn, decision=decision, results=results))
        prompt = results_prompt(results)
        parent = turn.events[-1].event_id  # the decision this input answers
    return LoopResult(status="budget", steps=tuple(steps))
