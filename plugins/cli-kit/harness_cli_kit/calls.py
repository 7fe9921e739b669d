"""What a tool call does, read from its native input: the approval request and the audit line.

Every CLI names its shell and file tools differently (``Bash``/``bash``/``shell``/
``exec_command``, ``Write``/``write``/``edit``...) and puts the command or path under a few
keys; :func:`call_facts` reads them once for all adapters. :func:`audit_summary` is the bounded,
one-line, control-character-free summary ``tool.started`` carries (credential-looking
assignments masked; the runtime also redacts every injected secret).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from harness_hookspecs import PermissionRequest, safe_line, summarize_input

_KINDS = {
    "bash": "shell",
    "shell": "shell",
    "exec_command": "shell",
    "local_shell": "shell",
    "execute": "shell",
    "run_shell_command": "shell",
    "write": "write",
    "edit": "write",
    "multiedit": "write",
    "notebookedit": "write",
    "apply_patch": "write",
    "patch": "write",
    "write_file": "write",
    "replace": "write",
    "read": "read",
    "read_file": "read",
    "glob": "read",
    "grep": "read",
    "ls": "read",
    "list": "read",
    "webfetch": "fetch",
    "web_fetch": "fetch",
    "fetch": "fetch",
}
_COMMAND_KEYS = ("command", "cmd")
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "absolute_path")
_CREDENTIAL = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:key|token|secret|password|passwd)[A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)"
)


def kind_of(name: str) -> str:
    if name.startswith("mcp__") or name.startswith("mcp:"):
        return "mcp"
    return _KINDS.get(name.lower(), "other")


def _command_of(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "make test"] -> the script itself; else the joined argv
        if len(value) == 3 and value[1] in ("-c", "-lc"):
            return str(value[2])
        return shlex.join(value)
    return None


def call_facts(name: str, arguments: Any) -> tuple[str, str | None, str | None]:
    """``(kind, command, path)`` of a call: what a command policy and an approver read."""
    kind = kind_of(name)
    command = path = None
    if isinstance(arguments, Mapping):
        for key in _COMMAND_KEYS:
            command = _command_of(arguments.get(key))
            if command is not None:
                break
        batch = arguments.get("commands")  # a list of shell lines (cline's run_commands)
        lines = batch if isinstance(batch, list) and batch else None
        if command is None and lines and all(isinstance(line, str) for line in lines):
            command = "; ".join(lines)
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                path = value
                break
    if command is not None and kind == "other":
        kind = "shell"
    return kind, command, path


def mask_credentials(text: str) -> str:
    return _CREDENTIAL.sub(lambda m: f"{m.group(1)}=***", text)


def audit_summary(name: str, arguments: Any) -> str | None:
    """The bounded summary of a call's input (shell command or file path), or ``None`` when
    the input names neither (the adapter's generic summary stays)."""
    _kind, command, path = call_facts(name, arguments)
    if command is None and path is None:
        return None
    tool = safe_line(name, 64)
    detail = mask_credentials(command) if command is not None else path
    return summarize_input(tool, detail)


def permission_request(
    name: str,
    arguments: Any,
    *,
    request_id: str | None = None,
    can_edit: bool = False,
) -> PermissionRequest:
    """The :class:`PermissionRequest` for a native tool call (input kept for an edit)."""
    kind, command, path = call_facts(name, arguments)
    return PermissionRequest.for_tool(
        name,
        kind=kind,
        command=None if command is None else mask_credentials(command),
        path=path,
        input=arguments if isinstance(arguments, Mapping) else {},
        can_edit=can_edit,
        request_id=request_id,
    )


def outcome_summary(*, exit_code: Any = None, size: Any = None) -> str | None:
    """``tool.completed``'s bounded outcome detail: an exit code or a byte count where known."""
    parts = []
    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
        parts.append(f"exit code {exit_code}")
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        parts.append(f"{size} bytes")
    return ", ".join(parts) or None
