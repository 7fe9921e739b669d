"""Codex app-server thread items -> tool events, and the tool calls its approval requests name.

An item (``item/started`` / ``item/completed``) carries what the call does: a
``commandExecution`` its command (Codex wraps it as ``/bin/bash -lc '...'``; the audit line and
the command policy read the script inside), a ``fileChange`` its changed paths. Summaries are
authored here from those facts, never from the call's output.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from harness_cli_kit import safe_id
from harness_cli_kit.calls import audit_summary, outcome_summary
from harness_hookspecs import Payload, ToolCompleted, ToolStarted

#: Codex item types that are tool calls, with the contract name and a generic summary.
TOOL_ITEMS = {
    "commandExecution": ("shell", "ran a shell command"),
    "fileChange": ("apply_patch", "changed files"),
    "mcpToolCall": ("mcp", "called an MCP tool"),
    "dynamicToolCall": ("tool", "called a tool"),
    "webSearch": ("web_search", "searched the web"),
}
_SHELLS = ("bash", "sh", "zsh", "dash")


def script_of(command: Any) -> str | None:
    """The script of ``/bin/bash -lc 'SCRIPT'`` (what the model asked to run), else the
    command line as Codex reported it."""
    if not isinstance(command, str) or not command.strip():
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and os.path.basename(words[0]) in _SHELLS and words[1] in ("-c", "-lc"):
        return words[2]
    return command


def first_path(item: Mapping[str, Any]) -> str | None:
    changes = item.get("changes")
    first = changes[0] if isinstance(changes, list) and changes else None
    path = first.get("path") if isinstance(first, Mapping) else None
    return path if isinstance(path, str) and path else None


def call_input(item: Mapping[str, Any]) -> dict[str, Any]:
    """What an item runs, as the shared call readers expect it (command or path)."""
    return {"command": script_of(item.get("command")), "path": first_path(item)}


class ItemTracker:
    """Each tool item's ``tool.started`` once and ``tool.completed`` once."""

    def __init__(self) -> None:
        self._started: set[str] = set()
        self._done: set[str] = set()
        #: item id -> its input (an approval request names only the item)
        self.inputs: dict[str, dict[str, Any]] = {}
        #: item ids the host (or the command policy) denied
        self.denied: set[str] = set()

    def payloads(self, item: Mapping[str, Any], completed: bool) -> list[Payload]:
        itype = item.get("type")
        call_id = safe_id(item.get("id"))
        if itype not in TOOL_ITEMS or call_id is None:
            return []
        name, summary = TOOL_ITEMS[itype]
        out: list[Payload] = []
        if call_id not in self._started:
            self._started.add(call_id)
            self.inputs[call_id] = call_input(item)
            audit = audit_summary(name, self.inputs[call_id])
            out.append(ToolStarted(call_id=call_id, name=name, summary=audit or summary))
        if completed and call_id not in self._done:
            self._done.add(call_id)
            out.append(self._completed(item, call_id, name, summary))
        return out

    def _completed(
        self, item: Mapping[str, Any], call_id: str, name: str, summary: str
    ) -> ToolCompleted:
        status = item.get("status")
        exit_code = item.get("exitCode")
        if status == "declined" or call_id in self.denied:
            text = f"the {name} call was denied by the permission policy"
            return ToolCompleted(call_id=call_id, name=name, ok=False, summary=text)
        ok = status in (None, "completed") and item.get("success") is not False
        if item.get("type") == "commandExecution":
            ok = ok and exit_code in (0, None)
        text = summary if ok else f"the {name} call failed"
        outcome = outcome_summary(exit_code=exit_code)
        if outcome is not None:
            text = f"{text} ({outcome})"
        return ToolCompleted(call_id=call_id, name=name, ok=ok, summary=text)
