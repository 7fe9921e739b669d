"""Moved: the field bounds are public as :mod:`harness_hookspecs.bounds` (this name stays)."""

from __future__ import annotations

from .bounds import (
    MAX_SAFE_INTEGER,
    PROVIDER_MAX,
    SESSION_ID_MAX,
    STATUS_MAX,
    TEXT_MAX,
    TURN_ID_MAX,
    bounded,
    has_control,
    is_name,
    name,
    non_negative_int,
    non_negative_number,
    optional_bounded,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "PROVIDER_MAX",
    "SESSION_ID_MAX",
    "STATUS_MAX",
    "TEXT_MAX",
    "TURN_ID_MAX",
    "bounded",
    "has_control",
    "is_name",
    "name",
    "non_negative_int",
    "non_negative_number",
    "optional_bounded",
]
