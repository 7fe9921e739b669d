"""Argument types and help texts the commands share."""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Callable

LEDGER_HELP = "ledger URL (default: $HARNESS_LEDGER or sqlite:.harness/ledger.sqlite)"


def positive_seconds(text: str) -> float:
    from ...number_checks import positive_number

    try:
        return positive_number(text, seconds=True)
    except ValueError as error:
        raise ArgumentTypeError(str(error)) from None


def positive_number(text: str) -> float:
    from ...number_checks import positive_number

    try:
        return positive_number(text)
    except ValueError as error:
        raise ArgumentTypeError(str(error)) from None


def count(minimum: int) -> Callable[[str], int]:
    """A whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        from ...number_checks import whole_number

        try:
            return whole_number(text, minimum)
        except ValueError as error:
            raise ArgumentTypeError(str(error)) from None

    parse.__name__ = "count"
    return parse
