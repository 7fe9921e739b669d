"""harness-codex: drive the Codex CLI through harness_core."""

from .adapter import CodexAdapter, CodexStream, parse_stream

__all__ = ["CodexAdapter", "CodexStream", "parse_stream"]
