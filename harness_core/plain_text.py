"""Short plain-text renderings a person reads: a clipped line, a failure, token counts and cost,
a duration. Shared by the CLI's run view and :mod:`harness_core.transcript`; imported by every
``harness run`` that shows an event, so it holds functions only (no classes to build).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_hookspecs import Usage

__all__ = ["RESTARTED", "clip", "cost_text", "duration_text", "failure_text", "usage_text"]


#: What a live reader says at ``turn.restarted`` (``harness run``, ``harness events``, the
#: viewer): the earlier attempt's output is superseded by the one that follows.
RESTARTED = "the turn restarted; what the previous attempt streamed is void"


def clip(text: str, limit: int = 160) -> str:
    """``text`` on one line, at most ``limit`` characters (``...`` marks a cut); a carriage
    return is shown as ``\\r`` too (on a terminal it would overwrite the line's start)."""
    flat = text.replace("\n", "\\n").replace("\r", "\\r")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_text(reason: str, message: str, hint: str | None) -> str:
    return f"{reason}: {message}" + (f" ({hint})" if hint else "")


def usage_text(usage: Usage | None) -> str:
    """``12 in / 34 out tokens, $0.0012`` with unknown parts left out ('' when all unknown)."""
    if usage is None:
        return ""
    parts = []
    if usage.input_tokens is not None or usage.output_tokens is not None:
        parts.append(f"{_n(usage.input_tokens)} in / {_n(usage.output_tokens)} out tokens")
    if usage.cost_usd is not None:
        parts.append(cost_text(usage.cost_usd))
    return ", ".join(parts)


def cost_text(cost: float | None) -> str:
    if cost is None:
        return "-"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"
