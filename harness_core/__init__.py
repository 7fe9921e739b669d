"""harness_core: the runtime that drives harness plugins through one Session -> Turns contract."""

from __future__ import annotations

from harness_hookspecs import HarnessError, hookimpl

from .controller import Controller, Turn, TurnResult
from .function_harness import FunctionSession, Message, Result, harness
from .plugins import Plugins, get_plugins, plugins_from

__all__ = [
    "Controller",
    "FunctionSession",
    "HarnessError",
    "Message",
    "Plugins",
    "Result",
    "Turn",
    "TurnResult",
    "get_plugins",
    "harness",
    "hookimpl",
    "plugins_from",
]
