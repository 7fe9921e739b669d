"""fork: fork opens a child at an event, recorded in both sessions; unclaimed, refused.

A harness claiming ``fork`` opens a child at an event of a parent (``session.forked``
in both), whose next turn ends; an unknown event is ``invalid-request``; unclaimed,
``unsupported-feature`` and no session opened."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict


@check("fork", "fork opens a child at an event, recorded in both sessions; unclaimed, refused")
def fork(evidence: Evidence) -> Outcome:
    seen = evidence.run.branching
    if seen is None:
        return verdict([], "", "the branching phase did not run")
    return verdict(seen.fork.problems, seen.fork.note, seen.fork.not_run)
