"""The pluggy markers and names shared by every plugin and the runtime."""

from __future__ import annotations

import pluggy

#: pluggy project name; also the entry-point group plugins register under.
PROJECT_NAME = "harness_core"
ENTRY_POINT_GROUP = "harness_core"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
