"""Event timestamps: UTC, microseconds, ``Z`` (cheap: the second's prefix is cached)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

_second_cache: list[Any] = [-1, ""]


def now() -> str:
    """UTC now as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (what ``datetime.isoformat`` would give).

    The date-and-seconds prefix is formatted once per second; the microseconds are appended.
    """
    micros = time.time_ns() // 1000
    cache = _second_cache
    if cache[0] != micros // 1_000_000:
        second = micros // 1_000_000
        cache[1] = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        cache[0] = second
    prefix: str = cache[1]
    return prefix + "%06dZ" % (micros % 1_000_000)  # noqa: UP031 - fastest form here
