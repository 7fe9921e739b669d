"""Starting a turn: the checks, the ``RunTurnRequest``, the opening event and the adapter's
event stream, shared by ``Controller.turn`` (a producer task drives it) and
``Controller.run_turn`` (the caller's task drives it inline, :meth:`Turn.run_inline`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from typing import Any, Protocol

import anyio
from attrs import frozen
from harness_hookspecs import HarnessError, Payload, RunTurnRequest, Status, TurnStarted
from harness_hookspecs.values import Value

from .branching import Checkpoints
from .budgets import DEFAULT_OUTPUT_RETRIES
from .request_checks import safe_hint
from .retry import check_attempt, opening_event
from .turn import LiveSession, NotStarted, Turn, TurnOwner, end_unretried


class TurnStarter(TurnOwner, Protocol):
    """What starting a turn needs from the controller (a protocol: no import circle)."""

    turn_timeout: float | None
    max_events_per_turn: int | None
    #: the workspace checkpoints taken around each turn (when ``checkpoints.on_turns``)
    checkpoints: Checkpoints


@frozen(repr=False, eq=False)
class TurnOptions(Value):
    """How one turn runs: the keywords of :meth:`Controller.turn` and :meth:`Controller.run_turn`
    (see there), as one value."""

    timeout: float | None = None
    max_events: int | None = None
    turn_id: str | None = None
    attempt: int = 1
    output_schema: Mapping[str, Any] | None = None
    output_retries: int = DEFAULT_OUTPUT_RETRIES
    parent_event_id: str | None = None


async def begin_turn(
    controller: TurnStarter,
    live: LiveSession,
    prompt: str,
    options: TurnOptions,
    *,
    inline: bool,
) -> Turn:
    """The session's new active turn, ``turn.started`` recorded and the adapter's stream in
    place; started (a producer task) unless ``inline``. If the adapter refuses the turn, the
    turn comes back already ended with ``turn.failed``."""
    if live.active is not None:
        raise HarnessError("turn-active")
    clock = controller.clock()
    live.limits.before_turn(clock)
    turn_id, output_schema = options.turn_id, options.output_schema
    retried = turn_id is not None
    # 96 random bits, as the first 24 hex digits of a uuid4 were (without building a UUID)
    turn_id = "turn_" + os.urandom(12).hex() if turn_id is None else turn_id
    structured = None
    if output_schema is not None:  # the structured turn's module only for a turn that has one
        from .structured_output import structured_turn

        structured = structured_turn(live.descriptor, output_schema, options.output_retries)
    live.recorder.check_parent(options.parent_event_id)
    asked = structured.first_prompt(prompt) if structured else prompt
    if live.instructions_pending is not None:  # no native mechanism: before the first prompt
        asked = f"{live.instructions_pending}\n\n{asked}"
    try:
        request = RunTurnRequest(
            session=live.ref,
            turn_id=turn_id,
            prompt=asked,
            output_schema=output_schema,
        )
    except (TypeError, ValueError) as error:
        raise HarnessError("invalid-request", safe_hint(error)) from None
    opening: Payload = TurnStarted(prompt=prompt)
    if retried and live.turn_ids is not None and turn_id not in live.turn_ids:
        check_attempt(options.attempt)  # a new id: this live session knows every turn it holds
    elif retried:  # (a Temporal worker names every turn: no read of the whole session each)
        opening = await anyio.to_thread.run_sync(
            opening_event, controller.ledger, live.ref.session_id, turn_id, options.attempt, prompt
        )
    start = skipped = None
    if controller.checkpoints.on_turns:
        start, skipped = await controller.checkpoints.turn_start(live, turn_id)
        if live.active is not None:  # another turn began while the snapshot ran
            raise HarnessError("turn-active")
    timeout = options.timeout if options.timeout is not None else controller.turn_timeout
    deadline = clock + timeout if timeout is not None else None
    deadline, limit_hint = live.limits.deadline(deadline)
    live.context.deadline = deadline
    turn = Turn(
        controller,
        live,
        turn_id,
        NotStarted(),
        deadline,
        options.max_events if options.max_events is not None else controller.max_events_per_turn,
    )
    live.active = turn
    if live.turn_ids is not None:
        live.turn_ids.add(turn_id)
    if start is not None:
        turn.after_end = partial(controller.checkpoints.turn_end, live, turn_id, start)
    turn.limit_hint = limit_hint
    live.limits.turns += 1
    live.context.turn_id, live.context.recorder = turn_id, turn.record_runtime
    turn.structured = structured
    if live.retrying is not None:
        end_unretried(live, turn_id)
    live.recorder.lineage.expect(options.parent_event_id)
    live.instructions_pending = None  # delivered with this turn's prompt (if pending)
    await turn.begin(opening, request, inline=inline)
    if skipped is not None:  # right after turn.started: the producer has not run yet
        turn.record_runtime(Status(message=skipped))
    return turn
