"""Clocks: event timestamps (UTC, microseconds, ``Z``; cheap: the second's prefix is cached)
and the running async backend's monotonic clock."""

from __future__ import annotations

import time
from collections.abc import Callable
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


def epoch_seconds(timestamp: str) -> float | None:
    """An event's timestamp (what :func:`now` writes, or any zoned ISO 8601 spelling) as
    seconds since the epoch; ``None`` when it is not one."""
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def timestamp_ok(value: Any) -> bool:
    """Whether ``value`` is an ISO 8601 timestamp with a zone (what :func:`now` writes, or any
    zoned spelling): the conformance kit's check of a harness's events, and the import's of a
    bundle's."""
    if not isinstance(value, str) or not value:
        return False
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def backend_clock() -> Callable[[], float]:
    """The running backend's ``current_time``, looked up once (``anyio.current_time`` looks the
    backend up on every call: ~1 us, several times a session)."""
    try:
        from anyio._core._eventloop import get_async_backend

        clock: Callable[[], float] = get_async_backend().current_time
    except Exception:  # another anyio layout: the public function
        import anyio

        return anyio.current_time
    return clock
