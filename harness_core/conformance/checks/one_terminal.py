"""one-terminal: exactly one terminal event per turn, and it is the last."""

from __future__ import annotations

from harness_hookspecs import TERMINAL_TYPES, Event

from ..check import Evidence, Outcome, check, verdict


@check("one-terminal", "exactly one terminal event per turn, and it is the last")
def one_terminal(evidence: Evidence) -> Outcome:
    problems = list(evidence.probe.violations.get("one-terminal", []))
    by_turn: dict[str, list[Event]] = {}
    for e in evidence.events:
        if e.turn_id is not None:
            by_turn.setdefault(e.turn_id, []).append(e)
    for turn_id, turn_events in by_turn.items():
        types = [e.type for e in turn_events]
        terminals = sum(t in TERMINAL_TYPES for t in types)
        if types[0] != "turn.started":
            problems.append(f"{turn_id}: does not start with turn.started")
        if terminals != 1 or types[-1] not in TERMINAL_TYPES:
            problems.append(f"{turn_id}: {terminals} terminal events, last is {types[-1]}")
    for turn in evidence.turns:
        types = [e.type for e in turn.seen]
        if turn.error is None and (
            not types
            or types[-1] not in TERMINAL_TYPES
            or sum(t in TERMINAL_TYPES for t in types) != 1
        ):
            problems.append(f"{turn.label}: the caller did not receive exactly one terminal, last")
    return verdict(problems, f"{len(by_turn)} turns, one terminal each, last", evidence.nothing)
