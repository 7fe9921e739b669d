"""Argument types and help texts the commands share."""

from __future__ import annotations

import math
from argparse import ArgumentTypeError
from collections.abc import Callable

LEDGER_HELP = "ledger URL (default: $HARNESS_LEDGER or sqlite:.harness/ledger.sqlite)"


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ArgumentTypeError("must be a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise ArgumentTypeError("must be a positive number of seconds")
    return value


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ArgumentTypeError("must be a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ArgumentTypeError("must be a positive number")
    return value


def count(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ArgumentTypeError("must be a whole number") from None
        if value < minimum:
            raise ArgumentTypeError(f"must be at least {minimum}")
        return value

    parse.__name__ = "count"
    return parse
