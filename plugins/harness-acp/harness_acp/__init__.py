"""harness-acp: drive any Agent Client Protocol agent through harness_core."""

from __future__ import annotations

from .adapter import AcpAdapter
from .registry import AGENTS, AgentSpec

__all__ = ["AGENTS", "AcpAdapter", "AgentSpec"]
