"""Retried turns, and the crash recovery that runs before them.

A caller may run a turn again under its own turn id with a growing attempt (a Temporal activity
retried on another worker does). A retry of a turn whose earlier attempt ended without a
terminal (its writer died, or was fenced by a newer writer's ``claim``) is recorded as
``turn.restarted(attempt)``, and readers keep only the last attempt's output. Every turn ends
with exactly one terminal, whatever number of attempts it took.

Crash recovery: whoever resumes a session ends a turn a dead process left open with the
runtime's ``turn.failed(reason="interrupted")``, so readers are never left with a turn that
never ends. The resume that comes before a retry names the turn it retries
(``Controller.resume_session(..., retrying=turn_id)``): recovery then leaves that turn open, and
the retry records ``turn.restarted`` and the turn's one terminal. A retry that does not come is
still an end: when the session's next turn has another id, or the session is closed or left, the
runtime ends the turn as ``interrupted`` then; if the process dies first, the next resume does.

A retry of a turn that already ended - ``interrupted`` included: a plain resume ended it - is
refused (``invalid-request``; its result stands), and so is an attempt number that does not grow.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_hookspecs import (
    TERMINAL_TYPES,
    Event,
    HarnessError,
    LedgerStore,
    Payload,
    TurnRestarted,
    TurnStarted,
)

#: Events read per step when looking back for a session's last turn (grows 4x per step).
LOOK_BACK = 8


def turn_ended(events: Sequence[Event]) -> bool:
    """Whether a turn's events hold its end (a terminal: the turn's result)."""
    return any(event.type in TERMINAL_TYPES for event in events)


def dangling_turn(ledger: LedgerStore, session_id: str, last: int) -> str | None:
    """The session's last turn if it has no terminal (its process died mid-turn, or a resume
    left it open for its retry); ``last``: the session's last sequence.

    One turn runs at a time and a terminal is always its turn's last event, so the last event
    that belongs to a turn tells; session events (``session.resumed``...) may follow it."""
    end, step = last, 1  # the last event alone first: it usually tells
    while end > 0:
        start = max(0, end - step)
        window = ledger.events(session_id, after=start, limit=end - start)
        if not window:  # nothing to read back: nothing to recover
            return None
        for event in reversed(window):
            if event.turn_id is not None:
                return None if event.type in TERMINAL_TYPES else event.turn_id
        end, step = start, max(LOOK_BACK, step * 4)
    return None


def recovered(dangling: str | None, retrying: str | None) -> tuple[str | None, str | None]:
    """What a resume does with the turn a dead process left open (``dangling``):
    ``(turn to end as interrupted, turn kept open for its retry)``."""
    if dangling is not None and dangling == retrying:
        return None, dangling
    return dangling, None


def check_attempt(attempt: int) -> None:
    """``invalid-request`` unless ``attempt`` is a whole number from 1."""
    if type(attempt) is not int or attempt < 1:
        raise HarnessError("invalid-request", "the attempt is a number from 1")


def opening_event(
    ledger: LedgerStore, session_id: str, turn_id: str, attempt: int, prompt: str
) -> Payload:
    """The event that opens this attempt of ``turn_id``: ``turn.started`` or ``turn.restarted``."""
    check_attempt(attempt)
    earlier = [event for event in ledger.events(session_id) if event.turn_id == turn_id]
    if not earlier:
        return TurnStarted(prompt=prompt)
    if turn_ended(earlier):
        raise HarnessError("invalid-request", "the turn already ended; its result stands")
    last = max([1] + [e.payload.attempt for e in earlier if isinstance(e.payload, TurnRestarted)])
    if attempt <= last:
        raise HarnessError("invalid-request", f"a retry's attempt must be above {last}")
    return TurnRestarted(attempt=attempt)
