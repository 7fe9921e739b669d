"""cancel: targeted cancel reaches the caller as turn.cancelled; no turn process survives."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict
from ..processes import SeenProcess, survivors


@check("cancel", "targeted cancel reaches the caller as turn.cancelled; no turn process survives")
def cancel(evidence: Evidence) -> Outcome:
    run = evidence.run
    problems = [*run.cancel_problems, *evidence.probe.violations.get("cancel", [])]
    turn = run.cancel_turn
    declared = "cancel" in run.features
    turn_processes: list[SeenProcess] = []
    if turn is not None and turn.turn_id is not None:
        turn_processes = [p for p in evidence.probe.processes if p.turn_id == turn.turn_id]
        if declared and not run.cancel_problems:
            terminal = turn.terminal
            if terminal is None or terminal.type != "turn.cancelled":
                problems.append(
                    f"the caller received {terminal.type if terminal else 'no terminal'}, "
                    "not turn.cancelled"
                )
            elif getattr(terminal.payload, "by", None) != "host":
                problems.append("turn.cancelled does not say by=host")
        left = survivors(turn_processes) if turn_processes else []
        if left:
            problems.append(f"{len(left)} process(es) of the cancelled turn still alive: {left}")
    notes = "; ".join(run.cancel_notes)
    ok = (
        f"turn.cancelled reached the caller ({notes}); {len(turn_processes)} turn process(es), "
        "none left"
        if declared
        else notes
    )
    not_run = run.cancel_not_run or (evidence.nothing if turn is None else None)
    return verdict(problems, ok, not_run)
