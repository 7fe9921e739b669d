"""harness_core: the runtime that drives harness plugins through one Session -> Turns contract.

Names are imported lazily (PEP 562): ``import harness_core`` costs almost nothing, and
``harness --help`` or a plugin that only needs ``@harness`` never loads the controller.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not typing's: importing typing is a third of this module's import time
if TYPE_CHECKING:
    from typing import Any

    from harness_hookspecs import HarnessError, HostTool, hookimpl

    from .checkpoints import CheckpointSettings
    from .controller import Controller
    from .function_harness import FunctionSession, Message, Result, harness
    from .plugin_manager import Plugins, get_plugins, plugins_from
    from .turn import Turn, TurnResult

_WHERE = {
    "HarnessError": "harness_hookspecs",
    "hookimpl": "harness_hookspecs",
    "HostTool": "harness_hookspecs",
    "CheckpointSettings": "harness_core.checkpoints",
    "Controller": "harness_core.controller",
    "Turn": "harness_core.turn",
    "TurnResult": "harness_core.turn",
    "FunctionSession": "harness_core.function_harness",
    "Message": "harness_core.function_harness",
    "Result": "harness_core.function_harness",
    "harness": "harness_core.function_harness",
    "Plugins": "harness_core.plugin_manager",
    "get_plugins": "harness_core.plugin_manager",
    "plugins_from": "harness_core.plugin_manager",
}

__all__ = [
    "CheckpointSettings",
    "Controller",
    "FunctionSession",
    "HarnessError",
    "HostTool",
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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness_core' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
