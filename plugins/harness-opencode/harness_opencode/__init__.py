"""harness-opencode: drive the OpenCode CLI through harness_core."""

from .adapter import OpenCodeAdapter, parse_stream

__all__ = ["OpenCodeAdapter", "parse_stream"]
