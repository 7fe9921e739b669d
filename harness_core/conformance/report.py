"""What a conformance run reports: one result per check, and the table or JSON of them all."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen


@frozen
class CheckResult:
    """One check's verdict; ``detail`` says what was seen (or ``not exercised: <why>``)."""

    name: str
    passed: bool
    detail: str
    #: What the check establishes (filled in by the kit from the check's registration).
    description: str = field(default="", eq=False, repr=False)
    #: Nothing applied to this harness (``detail`` says why): ``SKIP``, counted apart.
    skipped: bool = False

    @property
    def mark(self) -> str:
        """``PASS``, ``SKIP`` or ``FAIL``."""
        return "SKIP" if self.skipped else ("PASS" if self.passed else "FAIL")


@frozen
class ConformanceReport:
    harness: str
    checks: tuple[CheckResult, ...]
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    @property
    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]

    @property
    def skipped(self) -> list[str]:
        return [check.name for check in self.checks if check.skipped]

    def counts(self) -> str:
        """``18 checks: 17 passed, 1 skipped, 0 failed``."""
        failed, skipped = len(self.failed), len(self.skipped)
        passed = len(self.checks) - failed - skipped
        return f"{len(self.checks)} checks: {passed} passed, {skipped} skipped, {failed} failed"

    def __getitem__(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "harness": self.harness,
            "passed": self.passed,
            "duration_s": round(self.duration, 3),
            "checks": [
                {"name": c.name, "passed": c.passed, "skipped": c.skipped, "detail": c.detail}
                for c in self.checks
            ],
        }

    def format_table(self) -> str:
        width = max((len(c.name) for c in self.checks), default=5)
        lines = [f"harness conformance: {self.harness}"]
        for check in self.checks:
            lines.append(f"  {check.mark}  {check.name:<{width}}  {check.detail}")
        lines.append(f"{self.counts()} ({self.duration:.1f}s)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()
