"""How the ledger marks a delegation call (:mod:`harness_core.delegation`), in a module light
enough for listings to import: ``harness sessions`` asks which listed sessions delegated before
it looks for their children, without loading the delegation machinery."""

from __future__ import annotations

__all__ = ["CALL_NAMES", "FUNCTION_TOOL_NAME", "TOOL_NAME"]

#: The host tool's name on the bridge (a Claude Code model sees ``mcp__harness__run_agent``).
TOOL_NAME = "run_agent"
#: Ledger tool name of a one-function harness's ``session.run_agent`` call.
FUNCTION_TOOL_NAME = "run_agent"
#: The ledger tool names of a delegation call (``tool.started``): through the bridge (its
#: ``bridge.`` prefix) and a one-function harness's ``session.run_agent``. Only a session
#: whose events hold one can have child sessions.
CALL_NAMES = frozenset({"bridge." + TOOL_NAME, FUNCTION_TOOL_NAME})
