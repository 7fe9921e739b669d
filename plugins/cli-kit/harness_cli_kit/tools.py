"""One ``tool.started`` and one ``tool.completed`` per call id, with adapter-authored summaries
(never the tool's input or output), however often the CLI repeats its tool events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_hookspecs import Payload, ToolCompleted, ToolStarted

FAILED = "the tool call failed"
#: Summaries for the lower-case shell and file tools several CLIs share (bash, read, ...).
SHELL_AND_FILES = {
    "bash": "ran a shell command",
    "write": "wrote a file",
    "edit": "edited a file",
    "read": "read a file",
    "grep": "searched files",
}


def call_id_of(value: Any) -> str | None:
    """A call id as the CLI reported it: a non-empty string of at most 256 characters."""
    return value if isinstance(value, str) and 0 < len(value) <= 256 else None


class ToolCalls:
    def __init__(self, summaries: Mapping[str, str], default: str = "used a tool") -> None:
        self.summaries = summaries
        self.default = default
        self.started: set[str] = set()
        self.completed: set[str] = set()

    def summary(self, name: str) -> str:
        return self.summaries.get(name, self.default)

    def start(self, call_id: str, name: str, summary: str | None = None) -> list[Payload]:
        if call_id in self.started:
            return []
        self.started.add(call_id)
        return [ToolStarted(call_id=call_id, name=name, summary=summary or self.summary(name))]

    def finish(
        self, call_id: str, name: str, ok: bool, summary: str | None = None
    ) -> list[Payload]:
        """``tool.completed`` once; a failed call says so, whatever ``summary`` is."""
        if call_id in self.completed:
            return []
        self.completed.add(call_id)
        text = (summary or self.summary(name)) if ok else FAILED
        return [ToolCompleted(call_id=call_id, name=name, ok=ok, summary=text)]
