"""harness-stdio-jsonl: any program that speaks the JSONL turn contract is a harness."""

from .adapter import StdioJsonlAdapter

__all__ = ["StdioJsonlAdapter"]
