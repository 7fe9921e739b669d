"""Session budgets and usage totals.

A :class:`Budget` limits a session: turns, wall clock (seconds since the session was opened:
its ``session.opened`` event's time, so a session resumed later - in another controller or
process - keeps its clock rather than starting a new one), input/output/total tokens and cost. The controller checks it before each turn (a spent budget
refuses the turn with ``limit-exceeded``) and on every usage event inside a turn (crossing a
limit ends the turn ``turn.failed(limit-exceeded)``, its processes killed, the hint naming the
limit). A controller's budget and a session's combine to the tighter of each limit.

Usage adds up field by field; a field no report knew stays ``None`` (unknown), never ``0``.
A sum saturates at the contract's bound (``MAX_SAFE_INTEGER`` tokens, ``COST_USD_MAX``): each
report is valid, so their total is recorded, exported and still binds a budget, never refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import anyio
import attrs
from attrs import frozen
from harness_hookspecs import HarnessError, Usage
from harness_hookspecs.bounds import COST_USD_MAX, MAX_SAFE_INTEGER
from harness_hookspecs.values import Value

__all__ = ["LIMIT_NAMES", "Budget", "add_usage", "sum_usage"]

_INT_LIMITS = ("max_turns", "max_input_tokens", "max_output_tokens", "max_tokens")
_NUMBER_LIMITS = ("max_wall_clock", "max_cost_usd")
LIMIT_NAMES = (*_INT_LIMITS, *_NUMBER_LIMITS)
#: How often a turn with an output schema retries a malformed answer by default (here, not in
#: ``structured_output``: the controller's signatures need it, the structured turn only when asked).
DEFAULT_OUTPUT_RETRIES = 2


def _check_limit(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    integral = attribute.name in _INT_LIMITS
    if isinstance(value, bool) or not isinstance(value, int if integral else (int, float)):
        kind = "a whole number" if integral else "a number"
        raise ValueError(f"{attribute.name} must be {kind}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be positive")


@frozen(repr=False, eq=False)
class Budget(Value):
    """Per-session limits; ``None`` = no limit. ``max_tokens`` counts input + output."""

    max_turns: int | None = attrs.field(default=None, validator=_check_limit)
    max_wall_clock: float | None = attrs.field(default=None, validator=_check_limit)
    max_input_tokens: int | None = attrs.field(default=None, validator=_check_limit)
    max_output_tokens: int | None = attrs.field(default=None, validator=_check_limit)
    max_tokens: int | None = attrs.field(default=None, validator=_check_limit)
    max_cost_usd: float | None = attrs.field(default=None, validator=_check_limit)

    @classmethod
    def of(cls, value: Budget | Mapping[str, Any] | None) -> Budget:
        """A budget from a mapping of limit names; a bad value is ``invalid-request``."""
        if value is None:
            return cls()
        if isinstance(value, Budget):
            return value
        unknown = sorted(set(value) - set(LIMIT_NAMES))
        if unknown:
            raise HarnessError("invalid-request", f"unknown budget limit {unknown[0]}"[:200])
        try:
            return cls(**dict(value))
        except (TypeError, ValueError) as error:
            raise HarnessError("invalid-request", str(error)[:200]) from None

    def tighter(self, other: Budget) -> Budget:
        """Each limit the smaller of the two (a missing one does not loosen the other)."""
        values = {}
        for name in LIMIT_NAMES:
            mine, theirs = getattr(self, name), getattr(other, name)
            values[name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
        return Budget(**values)

    @property
    def empty(self) -> bool:
        return all(getattr(self, name) is None for name in LIMIT_NAMES)

    def before_turn(self, turns: int, elapsed: float, usage: Usage | None) -> str | None:
        """Why no further turn may start (a safe hint naming the limit), or ``None``."""
        if self.max_turns is not None and turns >= self.max_turns:
            return f"max_turns {self.max_turns} reached"
        return self.spent(elapsed, usage)

    def spent(self, elapsed: float, usage: Usage | None) -> str | None:
        """Which limit ``usage``/``elapsed`` crossed (or reached, for cost and tokens)."""
        if self.max_wall_clock is not None and elapsed >= self.max_wall_clock:
            return f"max_wall_clock {self.max_wall_clock:g}s exceeded"
        if usage is None:
            return None
        tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
        checks: tuple[tuple[str, float | None, float | None], ...] = (
            ("max_input_tokens", self.max_input_tokens, tokens_in),
            ("max_output_tokens", self.max_output_tokens, tokens_out),
            (
                "max_tokens",
                self.max_tokens,
                None
                if tokens_in is None and tokens_out is None
                else (tokens_in or 0) + (tokens_out or 0),
            ),
            ("max_cost_usd", self.max_cost_usd, usage.cost_usd),
        )
        for name, limit, used in checks:
            if limit is not None and used is not None and used >= limit:
                return f"{name} {limit:g} reached"
        return None


_USAGE_FIELDS = tuple(a.name for a in attrs.fields(Usage) if a.name != "cost_estimated")
#: the largest value each field may sum to (the contract's bound for that field)
_USAGE_CEILINGS = {
    name: COST_USD_MAX if name == "cost_usd" else MAX_SAFE_INTEGER for name in _USAGE_FIELDS
}


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """``total + more`` field by field, saturating at the contract's bound; a field unknown
    to both stays unknown."""
    if more is None:
        return total
    if total is None:
        return more
    values: dict[str, Any] = {}
    for name in _USAGE_FIELDS:
        a, b = getattr(total, name), getattr(more, name)
        values[name] = a if b is None else b if a is None else min(a + b, _USAGE_CEILINGS[name])
    # a total with an estimated part is an estimate
    values["cost_estimated"] = total.cost_estimated or more.cost_estimated
    return Usage(**values)


def sum_usage(reports: Iterable[Usage]) -> Usage | None:
    total: Usage | None = None
    for usage in reports:
        total = add_usage(total, usage)
    return total


def _epoch(timestamp: Any) -> float | None:
    """An event's ISO 8601 timestamp as seconds since the epoch (None when unreadable)."""
    try:
        return datetime.fromisoformat(str(timestamp)).timestamp()
    except ValueError:
        return None


#: No limit at all (frozen: one instance serves every session that brings none)
NO_LIMITS = Budget()


@attrs.define
class SessionLimits:
    """One live session's budget and what it has used so far (turns, usage, wall clock)."""

    budget: Budget = NO_LIMITS
    #: when the session was opened, on the ``anyio.current_time()`` clock (for a resumed
    #: session: as far back as its ``session.opened`` event lies)
    started: float = 0.0
    turns: int = 0
    #: the session's own usage (its turns' reports)
    usage: Usage | None = None
    #: its own usage and every child session's (delegation): what its budget binds
    total: Usage | None = None
    #: a child session's parent's limits: each report counts there too, as it happens
    parent: SessionLimits | None = None

    def load(
        self,
        events: Iterable[Any],
        *,
        clock: Callable[[], float] = anyio.current_time,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """Count what a resumed session used before (turns started, usage reported) and
        start its wall clock at its opening."""
        for event in events:
            if event.type == "turn.started":
                self.turns += 1
            elif event.type == "usage":
                self.usage = add_usage(self.usage, event.payload.usage)
                self.total = add_usage(self.total, event.payload.usage)
            elif event.type == "session.opened":
                opened = _epoch(event.timestamp)
                if opened is not None:
                    # Never in the future: a clock that stepped back does not add time.
                    self.started = clock() - max(0.0, wall() - opened)

    def before_turn(self, now: float) -> None:
        """Refuse a turn once a limit is spent (``limit-exceeded``, the hint names it)."""
        hint = self.budget.before_turn(self.turns, now - self.started, self.total)
        if hint is None and self.parent is not None:
            hint = self.parent.spent(now)
        if hint is not None:
            raise HarnessError("limit-exceeded", hint)

    def spent(self, now: float) -> str | None:
        """The limit this session's budget (or an ancestor's) has reached, if any."""
        hint = self.budget.spent(now - self.started, self.total)
        if hint is None and self.parent is not None:
            hint = self.parent.spent(now)
            return None if hint is None else f"parent's {hint}"[:240]
        return hint

    def deadline(self, deadline: float | None) -> tuple[float | None, str | None]:
        """The turn's deadline with the session's wall clock; the hint when that is the
        earlier one (reaching it is ``limit-exceeded``, not ``timeout``)."""
        if self.budget.max_wall_clock is None:
            return deadline, None
        wall = self.started + self.budget.max_wall_clock
        if deadline is not None and deadline <= wall:
            return deadline, None
        return wall, f"max_wall_clock {self.budget.max_wall_clock:g}s exceeded"

    def add(self, usage: Usage, now: float) -> str | None:
        """Count a usage report (in this session's totals and its ancestors'); the limit it
        crossed, if any (a parent's limit too: a child may not spend past it)."""
        self.usage = add_usage(self.usage, usage)
        limits: SessionLimits | None = self
        while limits is not None:
            limits.total = add_usage(limits.total, usage)
            limits = limits.parent
        return self.spent(now)
