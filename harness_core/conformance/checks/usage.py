"""usage: usage, when emitted, is claimed and non-negative integers."""

from __future__ import annotations

from harness_hookspecs import UsageReported

from ..check import Evidence, Outcome, check, verdict
from ..rules import usage_problem


@check("usage", "usage, when emitted, is claimed and non-negative integers")
def usage(evidence: Evidence) -> Outcome:
    problems = list(evidence.probe.violations.get("usage", []))
    count = 0
    for e in evidence.events:
        if isinstance(e.payload, UsageReported):
            count += 1
            problem = usage_problem(e.payload.usage)
            if problem is not None:
                problems.append(f"event {e.sequence}: {problem}")
            elif "usage" not in evidence.run.features:
                problems.append(f"event {e.sequence}: usage emitted but not claimed")
    return verdict(
        sorted(set(problems), key=problems.index),
        f"{count} usage events, all valid" if count else "no usage emitted (absence means unknown)",
        evidence.nothing,
    )
