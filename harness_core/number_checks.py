"""The one check of the numbers a person or a host passes in (a turn deadline, a budget, a
count): the CLI's options (text) and ``harness serve``'s JSON fields (numbers) both go through
it, so NaN, Infinity and ``1e400`` are refused the same way everywhere. Standard library only:
the CLI's parser imports it."""

from __future__ import annotations

import math


def positive_number(value: object, *, seconds: bool = False) -> float:
    """``value`` (text or a JSON number, never a bool) as a positive finite float;
    ``ValueError`` with a fixed message ("must be a positive number[ of seconds]") if not."""
    unit = " of seconds" if seconds else ""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"must be a number{unit}") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer past any float: not finite
            number = math.inf
    else:
        raise ValueError(f"must be a number{unit}")
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"must be a positive number{unit}")
    return number


def whole_number(value: object, minimum: int) -> int:
    """``value`` (text or a JSON integer, never a bool) as an int of at least ``minimum``;
    ``ValueError`` with a fixed message if not."""
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            raise ValueError("must be a whole number") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise ValueError("must be a whole number")
    if number < minimum:
        raise ValueError(f"must be at least {minimum}")
    return number
