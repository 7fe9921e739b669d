"""approvals: permission requests reach the host and are recorded; strict needs them.

A harness that declares ``permissions`` asks the host during its profile's ``approval_prompt``
turn (strict posture, a host that denies); one that does not must refuse strict with
``unsupported-feature`` (then the check passes as skipped, with the reason).
"""

from __future__ import annotations

from ..check import Evidence, Outcome, check, skip, verdict


@check("approvals", "permission requests reach the host and are recorded; strict needs them")
def approvals(evidence: Evidence) -> Outcome:
    seen = evidence.run.approvals
    if seen is None:
        return verdict([], "", "the approvals phase did not run")
    if seen.skipped and not seen.problems:
        return skip(seen.note)
    return verdict(seen.problems, seen.note, seen.not_run)
