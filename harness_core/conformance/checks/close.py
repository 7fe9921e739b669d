"""close: close is idempotent, a closed session refuses turns, no process survives."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict
from ..processes import survivors


@check("close", "close is idempotent, a closed session refuses turns, no process survives")
def close(evidence: Evidence) -> Outcome:
    run = evidence.run
    problems = [*run.close_problems, *evidence.probe.violations.get("close", [])]
    # Every process but the cancelled turns' (the cancel and steer checks judge those).
    cancelled = {
        run.cancel_turn.turn_id if run.cancel_turn is not None else None,
        run.branching.steered_turn_id if run.branching is not None else None,
    } - {None}
    processes = [
        p for p in evidence.probe.processes if p.turn_id is None or p.turn_id not in cancelled
    ]
    left = survivors(processes) if processes else []
    if left:
        problems.append(f"{len(left)} process(es) still alive after close/release: {left}")
    return verdict(
        problems,
        f"idempotent, refuses turns with session-closed {run.close_note}".strip()
        + f"; {len(processes)} process(es), none left",
        run.close_not_run,
    )
