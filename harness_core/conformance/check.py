"""A conformance check as one registered unit: its name, what it establishes, how it judges.

Each check lives in its own module under :mod:`harness_core.conformance.checks`, written as::

    @check("event-ids", "event ids are unique across all sessions")
    def event_ids(evidence: Evidence) -> Outcome:
        ...
        return verdict(problems, "37 unique ids", evidence.nothing)

and is listed, in report order, in ``checks.ALL``. Judging only reads the :class:`Evidence` the
run collected (the ``cancel`` and ``close`` checks also wait a bounded time for processes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import frozen
from harness_hookspecs import Event

from .probe import Probe
from .report import CheckResult
from .rules import clip
from .run import KitTurn, Run


@frozen
class Evidence:
    """What one run saw: its state, and the events read back from the reopened ledger."""

    run: Run
    stored: Mapping[str, list[dict[str, Any]]]
    read_error: str | None

    @property
    def probe(self) -> Probe:
        return self.run.probe

    @property
    def events(self) -> list[Event]:
        return self.run.events

    @property
    def turns(self) -> list[KitTurn]:
        return self.run.turns

    @property
    def nothing(self) -> str | None:
        """Why nothing could be exercised (no descriptor or no session), or None."""
        return self.run.descriptor_error or self.run.open_error


@frozen
class Outcome:
    passed: bool
    detail: str
    #: nothing applied to this harness: reported as SKIP and counted apart (never a failure)
    skipped: bool = False


def skip(detail: str) -> Outcome:
    """Nothing to exercise for this harness; ``detail`` says why (shown beside ``SKIP``)."""
    return Outcome(True, detail, skipped=True)


def verdict(problems: Sequence[str], ok_detail: str, not_run: str | None = None) -> Outcome:
    """Pass with ``ok_detail`` unless there are problems (the first one is shown) or the check
    could not be exercised (``not_run`` says why: a check never passes by default)."""
    if not_run is not None:
        return Outcome(False, f"not exercised: {not_run}")
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Outcome(False, clip(problems[0], 200) + more)
    return Outcome(True, ok_detail)


def fail(detail: str) -> Outcome:
    """Fail with ``detail`` as it is."""
    return Outcome(False, detail)


@frozen
class Check:
    name: str
    description: str
    judge: Callable[[Evidence], Outcome]

    def __call__(self, evidence: Evidence) -> CheckResult:
        outcome = self.judge(evidence)
        return CheckResult(
            self.name, outcome.passed, outcome.detail, self.description, outcome.skipped
        )


def check(name: str, description: str) -> Callable[[Callable[[Evidence], Outcome]], Check]:
    """Register a judging function as the check ``name``."""

    def register(judge: Callable[[Evidence], Outcome]) -> Check:
        return Check(name, description, judge)

    return register
