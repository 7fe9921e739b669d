"""resume: resume from the SessionRef in a new controller (or unsupported-feature)."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict


@check("resume", "resume from the SessionRef in a new controller (or unsupported-feature)")
def resume(evidence: Evidence) -> Outcome:
    run = evidence.run
    if "resume" in run.features and not run.resume_problems and run.resume_not_run is None:
        ok = run.resume_note or "resumed"
    else:
        ok = run.resume_note
    return verdict(run.resume_problems, ok, run.resume_not_run)
