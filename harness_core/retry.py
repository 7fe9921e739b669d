"""Retried turns: a caller may run a turn again under its own turn id with a growing attempt.

A retry of a turn whose earlier attempt ended without a terminal (its writer died, or was fenced
by a newer writer's ``claim``) is recorded as ``turn.restarted(attempt)``, and readers keep only
the last attempt's output. The resume that claimed the session may already have closed the dead
attempt with the runtime's ``turn.failed(reason="interrupted")`` (crash recovery): that attempt's
end, not the turn's, so the retry is still recorded as ``turn.restarted`` - every attempt ends
with exactly one terminal, and the turn's result is its last attempt's. A retry of a turn that already ended is refused (its result stands),
and so is an attempt number that does not grow.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_hookspecs import (
    TERMINAL_TYPES,
    Event,
    HarnessError,
    LedgerStore,
    Payload,
    TurnFailed,
    TurnRestarted,
    TurnStarted,
)


def _interrupted(payload: Payload) -> bool:
    """The runtime's end of an attempt whose process died (see crash recovery)."""
    return isinstance(payload, TurnFailed) and payload.reason == "interrupted"


def turn_ended(events: Sequence[Event]) -> bool:
    """Whether a turn's events (in order) hold its result: a terminal that is not the crash
    recovery's ``interrupted`` (which ends an attempt, and a retry may still follow)."""
    terminal = next((e for e in reversed(events) if e.type in TERMINAL_TYPES), None)
    return terminal is not None and not _interrupted(terminal.payload)


def opening_event(
    ledger: LedgerStore, session_id: str, turn_id: str, attempt: int, prompt: str
) -> Payload:
    """The event that opens this attempt of ``turn_id``: ``turn.started`` or ``turn.restarted``."""
    if type(attempt) is not int or attempt < 1:
        raise HarnessError("invalid-request", "the attempt is a number from 1")
    earlier = [event for event in ledger.events(session_id) if event.turn_id == turn_id]
    if not earlier:
        return TurnStarted(prompt=prompt)
    if turn_ended(earlier):
        raise HarnessError("invalid-request", "the turn already ended; its result stands")
    last = max([1] + [e.payload.attempt for e in earlier if isinstance(e.payload, TurnRestarted)])
    if attempt <= last:
        raise HarnessError("invalid-request", f"a retry's attempt must be above {last}")
    return TurnRestarted(attempt=attempt)
