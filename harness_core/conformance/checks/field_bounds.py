"""field-bounds: every payload field is within its bounds and survives serialization."""

from __future__ import annotations

from ..check import Evidence, Outcome, check, verdict
from ..rules import CANONICAL, payload_problem


@check("field-bounds", "every payload field is within its bounds and survives serialization")
def field_bounds(evidence: Evidence) -> Outcome:
    problems = list(evidence.probe.violations.get("field-bounds", []))
    for e in evidence.events:
        problem = payload_problem(e.payload) if type(e.payload) in CANONICAL else None
        if problem is not None:
            problems.append(f"event {e.sequence} ({e.type}): {problem}")
    return verdict(problems, "every payload within bounds", evidence.nothing)
