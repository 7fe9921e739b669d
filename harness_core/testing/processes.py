"""Process-table checks for tests: is a pid alive, who is left in a process group.

The implementation is :mod:`harness_core.process_table` (shared with the conformance kit).
"""

from __future__ import annotations

from ..process_table import (
    alive,
    children,
    group_members,
    left_behind,
    survivors_of_a_killed_starter,
    tagged,
    wait_gone,
    with_marker,
)

__all__ = [
    "alive",
    "children",
    "group_members",
    "left_behind",
    "survivors_of_a_killed_starter",
    "tagged",
    "wait_gone",
    "with_marker",
]
