"""Optional parts found by entry point, never imported by name: the core's seam to the
distributions it can use when they are installed (the loopback MCP bridge, the fake model
server), as ``harness_core`` plugins are found through their entry-point group.

``importlib.metadata.entry_points`` parses every installed distribution's metadata (150 ms in
a venv with the bundled plugins); this reads only the ``entry_points.txt`` files (a few ms),
once per process and group.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib import import_module
from typing import Any

#: ``harness_core.tool_bridge``: ``mcp-loopback`` serves a session's host tools (the module
#: provides ``Bridge``, ``Limits`` and ``select_tools``).
TOOL_BRIDGE_GROUP = "harness_core.tool_bridge"
#: ``harness_core.testing``: ``fake-model`` is the scripted fake model server package.
TESTING_GROUP = "harness_core.testing"


class ExtensionMissing(ModuleNotFoundError):
    """No installed distribution provides the entry point (or its module failed to import)."""


@cache
def _group(group: str) -> dict[str, str]:
    import configparser  # (only when an extension is looked up: not on every start-up)

    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
            parser.optionxform = str  # type: ignore[assignment,method-assign]
            try:
                parser.read(os.path.join(entry or ".", name, "entry_points.txt"), "utf-8")
            except (OSError, configparser.Error):
                continue
            if parser.has_section(group):
                for key, value in parser.items(group):
                    found.setdefault(key, value.strip())  # the first on sys.path wins
    return found


def load(group: str, name: str) -> Any:
    """The object at entry point ``name`` of ``group``; :class:`ExtensionMissing` when none is
    installed or its module (or a dependency of it) is missing."""
    value = _group(group).get(name)
    if value is None:
        raise ExtensionMissing(f"no {group} entry point {name!r} installed", name=name)
    module, _, attribute = value.partition(":")
    try:
        obj = import_module(module.strip())
    except ModuleNotFoundError as error:
        raise ExtensionMissing(str(error), name=error.name) from None
    for part in attribute.strip().split(".") if attribute.strip() else ():
        obj = getattr(obj, part)
    return obj
