"""Riding out the database: what is retried, how long, and at what pace.

A PostgreSQL restart (``pg_ctl restart -m fast``), a managed database's failover or an
administrator's ``pg_terminate_backend`` ends every connection the store holds; the server is
back seconds later. Writes, reads and claims retry over a bounded **window** (default
:data:`DEFAULT_WINDOW`, ``$HARNESS_LEDGER_RETRY_WINDOW`` or the store's ``retry_window``),
reopening their connection each time, with exponential backoff and jitter (so a hundred workers
do not reconnect in step). Only connection-level failures are retried (``OperationalError``:
connection lost or refused, the server starting up or shutting down, a deadlock or
serialization failure the server broke); a refused statement is not. Retrying a write is safe:
appends are idempotent on the sequence and the event id.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from harness_hookspecs import HarnessError

#: Seconds of retrying before a failure is reported: a fast restart or a managed failover.
DEFAULT_WINDOW = 30.0
#: The environment variable that sets the window (seconds) for every store of the process.
ENV_WINDOW = "HARNESS_LEDGER_RETRY_WINDOW"
#: The first pause (seconds); it doubles per attempt up to :data:`MAX_DELAY`.
FIRST_DELAY = 0.05
MAX_DELAY = 2.0
#: What a retry may cure: the connection, not the statement.
RETRYABLE = (psycopg.OperationalError,)

T = TypeVar("T")


def window_setting(window: float | None = None) -> float:
    """``window`` when given, else ``$HARNESS_LEDGER_RETRY_WINDOW``, else the default."""
    if window is None:
        text = os.environ.get(ENV_WINDOW, "").strip()
        if not text:
            return DEFAULT_WINDOW
        try:
            window = float(text)
        except ValueError:
            raise HarnessError(
                "invalid-request", f"{ENV_WINDOW} is not a number of seconds"
            ) from None
    if not window >= 0:  # also refuses NaN
        raise HarnessError("invalid-request", "the ledger retry window must be >= 0 seconds")
    return float(window)


class RetryWindow:
    """The pauses between attempts of one operation, until ``window`` seconds are spent."""

    __slots__ = ("_attempt", "_ends")

    def __init__(self, window: float) -> None:
        self._ends = time.monotonic() + window
        self._attempt = 0

    def next_delay(self) -> float | None:
        """Seconds to wait before the next attempt; ``None`` once the window is spent."""
        left = self._ends - time.monotonic()
        if left <= 0:
            return None
        ceiling = min(MAX_DELAY, FIRST_DELAY * 2.0**self._attempt)
        self._attempt += 1
        # "Equal jitter": at least half the backoff (no hot loop), the rest random (no herd).
        return min(left, ceiling / 2 + random.uniform(0, ceiling / 2))


def retrying(operation: Callable[[], T], window: float, lost: Callable[[], object]) -> T:
    """``operation()``, again after a pause while it fails for a retryable reason and the
    window lasts (``lost()`` runs after each such failure: drop the connection); then the
    last failure is raised."""
    pace = RetryWindow(window)
    while True:
        try:
            return operation()
        except RETRYABLE:
            lost()
            delay = pace.next_delay()
            if delay is None:
                raise
            time.sleep(delay)
