"""Moved: the plugin manager is :mod:`harness_core.plugin_manager` (this name stays importable)."""

from __future__ import annotations

from .plugin_manager import (
    CORE_PLUGIN_NAME,
    ENV_PLUGINS,
    BrokenPlugin,
    PluginInfo,
    Plugins,
    get_plugins,
    plugins_from,
    reset_plugins,
)
from .registry import as_adapter

__all__ = [
    "CORE_PLUGIN_NAME",
    "ENV_PLUGINS",
    "BrokenPlugin",
    "PluginInfo",
    "Plugins",
    "as_adapter",
    "get_plugins",
    "plugins_from",
    "reset_plugins",
]
