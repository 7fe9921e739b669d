"""turns-completed: open -> turn -> completed: every ordinary turn ends turn.completed."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict


@check("turns-completed", "open -> turn -> completed: every ordinary turn ends turn.completed")
def turns_completed(evidence: Evidence) -> Outcome:
    run = evidence.run
    problems = []
    for turn in run.ordinary:
        terminal = turn.terminal
        if turn.error is not None:
            problems.append(f"{turn.label} did not start ({turn.error})")
        elif terminal is None:
            problems.append(f"{turn.label} ended without a terminal event")
        elif terminal.type != "turn.completed":
            reason = getattr(terminal.payload, "reason", None)
            hint = getattr(terminal.payload, "hint", None)
            why = f" ({reason}{': ' + hint if hint else ''})" if reason else ""
            problems.append(f"{turn.label} ended {terminal.type}{why}")
    return verdict(
        problems,
        f"{len(run.ordinary)} ordinary turns completed",
        evidence.nothing if not run.ordinary else None,
    )
