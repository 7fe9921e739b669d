"""harness-pi: drive the Pi coding agent CLI through harness_core."""

from .adapter import PiAdapter, parse_stream

__all__ = ["PiAdapter", "parse_stream"]
