"""rewind: rewind restores the workspace (and the conversation where claimed).

A workspace checkpoint is restored for every harness; ``session.rewound`` takes the
conversation back exactly when the harness claims ``checkpoint``; the next turn ends."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict


@check("rewind", "rewind restores the workspace (and the conversation where claimed)")
def rewind(evidence: Evidence) -> Outcome:
    seen = evidence.run.branching
    if seen is None:
        return verdict([], "", "the branching phase did not run")
    return verdict(seen.rewind.problems, seen.rewind.note, seen.rewind.not_run)
