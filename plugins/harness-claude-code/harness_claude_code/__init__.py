"""harness-claude-code: drive the Claude Code CLI through harness_core."""

from .adapter import ClaudeCodeAdapter, ClaudeStream, parse_stream

__all__ = ["ClaudeCodeAdapter", "ClaudeStream", "parse_stream"]
