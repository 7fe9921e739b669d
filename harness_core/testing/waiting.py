"""Waiting on a condition in tests: a poll with a deadline, never a fixed sleep.

A fixed sleep guesses how long the other side takes; on a loaded machine the guess is wrong and
the test either fails or, worse, passes without having checked what it is named for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str = "the condition",
) -> T:
    """Poll ``condition`` until it returns something truthy, and return that; ``TimeoutError``
    naming ``what`` when ``timeout`` seconds pass first. Other tasks run between polls."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout:g}s")
        await anyio.sleep(interval)
