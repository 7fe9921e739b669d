"""The former name of :mod:`harness_core.ledger.base`, kept so store plugins written against it
still import."""

from __future__ import annotations

from .base import *  # noqa: F403
