"""Fixtures shared by the ``local`` provider's tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def lock_descriptors() -> Callable[[Path], int]:
    """How many descriptors of this process hold a durable workspace's lock file under a root
    open. A second one is a provision that found the lock held and waits (``queue``): the
    provider opens the lock file and tries it in one step, with no await between, so a task
    that sees the descriptor sees a provision that has already tried."""

    def count(root: Path) -> int:
        prefix = str(root.resolve()) + os.sep
        found = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # closed since the listing
                continue
            found += target.startswith(prefix) and target.endswith(".lock")
        return found

    return count
