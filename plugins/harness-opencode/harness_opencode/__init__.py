"""harness-opencode: drive OpenCode (``opencode serve``) through harness_core."""

from .adapter import OpenCodeAdapter
from .events import ServeEvents, parse_events

__all__ = ["OpenCodeAdapter", "ServeEvents", "parse_events"]
