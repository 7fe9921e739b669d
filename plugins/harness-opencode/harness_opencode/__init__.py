"""harness-opencode: drive OpenCode (``opencode serve``) through harness_core."""

from . import _httpx  # noqa: F401  (first: imports httpx without its command-line client)
from .adapter import OpenCodeAdapter
from .events import ServeEvents, parse_events

__all__ = ["OpenCodeAdapter", "ServeEvents", "parse_events"]
