"""harness-acp: drive any Agent Client Protocol agent through harness_core."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .registry import AGENTS, AgentSpec

if TYPE_CHECKING:
    from .adapter import AcpAdapter

__all__ = ["AGENTS", "AcpAdapter", "AgentSpec"]


def __getattr__(name: str) -> Any:
    # The adapter pulls in the ACP SDK (slow to import); load it only when asked for.
    if name == "AcpAdapter":
        from .adapter import AcpAdapter

        return AcpAdapter
    raise AttributeError(name)
