"""resume-process: resume by id in a new process, then a turn ends there."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict


@check(
    "resume-process",
    "resume by id in a new process, then a turn ends there",
)
def resume_process(evidence: Evidence) -> Outcome:
    outcome = evidence.run.process_resume
    if outcome is None:
        return verdict([], "", "the kit did not reach the new-process resume")
    if outcome.not_applicable is not None:
        # Said, not silently passed: the fact is in the detail the report shows.
        return Outcome(True, f"not applicable: {outcome.not_applicable}")
    return verdict(outcome.problems, outcome.note, outcome.not_run)
