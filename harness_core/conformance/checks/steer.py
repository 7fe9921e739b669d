"""steer: steer reaches the running turn; unclaimed or without a turn it is refused.

A harness claiming ``steer`` takes text into its running turn (one ``turn.steered``
before the turn's one terminal); without a running turn, ``turn-not-found``; unclaimed,
``unsupported-feature`` and nothing recorded."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict
from ..processes import survivors


@check("steer", "steer reaches the running turn; unclaimed or without a turn it is refused")
def steer(evidence: Evidence) -> Outcome:
    seen = evidence.run.branching
    if seen is None:
        return verdict([], "", "the branching phase did not run")
    problems = list(seen.steer.problems)
    steered = seen.steered_turn_id
    processes = [p for p in evidence.probe.processes if steered and p.turn_id == steered]
    left = survivors(processes) if processes else []
    if left:
        problems.append(f"{len(left)} process(es) of the steered turn still alive: {left}")
    return verdict(problems, seen.steer.note, seen.steer.not_run)
