"""harness_core sessions on Temporal: a workflow per session, an activity per turn.

A host drives them with :class:`TemporalController` (shaped like the local ``Controller``),
configured per session with :class:`ExecutorOptions` (``TemporalController(client, ledger=...,
options=ExecutorOptions(...))``); ``harness worker`` runs a worker, ``harness run --temporal
ADDRESS`` one turn on the workers. Names load on first use (temporalio is imported then).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .client import RemoteTurn, TemporalController
    from .shapes import ExecutorOptions, SessionSpec, TurnSummary
    from .worker import build_worker, run_worker

_WHERE = {
    "TemporalController": "executor_temporal.client",
    "RemoteTurn": "executor_temporal.client",
    "ExecutorOptions": "executor_temporal.shapes",
    "SessionSpec": "executor_temporal.shapes",
    "TurnSummary": "executor_temporal.shapes",
    "build_worker": "executor_temporal.worker",
    "run_worker": "executor_temporal.worker",
}

__all__ = [
    "ExecutorOptions",
    "RemoteTurn",
    "SessionSpec",
    "TemporalController",
    "TurnSummary",
    "build_worker",
    "run_worker",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'executor_temporal' has no attribute {name!r}")
    return getattr(import_module(module), name)
