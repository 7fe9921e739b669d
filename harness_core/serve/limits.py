"""Limits of ``harness serve`` shared by its argument parser and its app (a leaf module: the
parser imports it without pulling in the app)."""

from __future__ import annotations

#: The largest request body ``harness serve`` reads (a prompt of the contract's largest text,
#: 1 MiB characters, fits even as ``\uXXXX`` escapes); a larger one is refused with 413.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
