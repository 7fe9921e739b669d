"""The ``auto`` posture's command policy: allow / ask / deny for shell commands and file writes.

Patterns are shell globs (``fnmatch``) over the one-line command, or over the path for file
tools; a host configures them per controller (``CommandPolicy(...)``) or per session (the
session config's ``command_policy``: ``{"allow": [...], "ask": [...], "deny": [...],
"default": "allow"}``). The safe defaults always apply first and cannot be switched off by an
allow pattern: a recursive delete of ``/``, ``~``, ``..`` or anything outside the workspace,
piping a download into a shell, disk wipes, fork bombs, and file writes outside the workspace.

This is a guardrail for an autonomous turn, not a sandbox: the sandbox provider is what
actually confines the process.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen
from harness_hookspecs import HarnessError, PermissionRequest

__all__ = ["VERDICTS", "CommandPolicy"]

VERDICTS = ("allow", "ask", "deny")

# Pattern texts, compiled (and cached by ``re``) when a command is first judged: every run
# builds a policy, few ever ask it (~1 ms of start-up otherwise).
_PIPE_TO_SHELL = (
    r"\b(curl|wget|fetch)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|k|da)?sh\b|\b(curl|wget)\b[^|;&]*\|\s*python"
)
_DISK_WIPE = r"\bmkfs(\.\w+)?\b|\bdd\b[^;|&]*\bof=/dev/|>\s*/dev/(sd|nvme|hd)"
_FORK_BOMB = r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:"
_SEPARATORS = r"\|\||&&|[;|&\n]"


def _patterns(value: Iterable[str] | None) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or ()))


def _inside(path: str, workspace: str | None) -> bool:
    if workspace is None:
        return False
    base = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(base, os.path.expanduser(path)))
    return target == base or target.startswith(base + os.sep)


def _recursive_delete_outside(command: str, workspace: str | None) -> bool:
    import shlex

    for part in re.split(_SEPARATORS, command):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and words[0] in ("sudo", "command", "exec", "nice", "time"):
            words = words[1:]
        if not words or os.path.basename(words[0]) != "rm":
            continue
        flags = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
        long_flags = {w for w in words[1:] if w.startswith("--")}
        if not ("r" in flags.lower() or "--recursive" in long_flags):
            continue
        targets = [w for w in words[1:] if not w.startswith("-")]
        for target in targets:
            if target in ("/", "~", "*", ".", "..") or target.startswith(("/*", "~/", "$")):
                return True
            if not _inside(target, workspace):
                return True
    return False


@frozen
class CommandPolicy:
    """Allow / ask / deny globs; ``default`` is the verdict for what no pattern matches."""

    allow: tuple[str, ...] = field(converter=_patterns, factory=tuple)
    ask: tuple[str, ...] = field(converter=_patterns, factory=tuple)
    deny: tuple[str, ...] = field(converter=_patterns, factory=tuple)
    default: str = field(default="allow")

    @default.validator
    def _check_default(self, attribute: Any, value: str) -> None:
        if value not in VERDICTS:
            raise ValueError("default must be allow, ask or deny")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> CommandPolicy:
        """From a session config's ``command_policy`` mapping; bad input is ``invalid-request``."""
        if not config:
            return cls()
        if not isinstance(config, Mapping):
            raise HarnessError("invalid-request", "command_policy must be a mapping")
        try:
            for key in ("allow", "ask", "deny"):
                value = config.get(key, ())
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"command_policy {key} must be a list of patterns")
            return cls(
                allow=config.get("allow", ()),
                ask=config.get("ask", ()),
                deny=config.get("deny", ()),
                default=str(config.get("default", "allow")),
            )
        except (TypeError, ValueError) as error:
            raise HarnessError("invalid-request", str(error)[:200]) from None

    def verdict(self, request: PermissionRequest, workspace: str | None) -> tuple[str, str | None]:
        """``(verdict, reason)`` for one request; the reason is a fixed, safe sentence."""
        built_in = self._built_in(request, workspace)
        if built_in is not None:
            return "deny", built_in
        subject = request.command or request.path or request.tool
        for verdict, patterns in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            if any(fnmatch.fnmatchcase(subject, pattern) for pattern in patterns):
                return verdict, ("denied by the command policy" if verdict == "deny" else None)
        if self.default == "deny":
            return "deny", "not allowed by the command policy"
        return self.default, None

    @staticmethod
    def _built_in(request: PermissionRequest, workspace: str | None) -> str | None:
        command = request.command
        if command is not None:
            if _recursive_delete_outside(command, workspace):
                return "recursive delete outside the workspace"
            if re.search(_PIPE_TO_SHELL, command):
                return "piping a download into a shell"
            if re.search(_DISK_WIPE, command) or re.search(_FORK_BOMB, command):
                return "destructive system command"
        outside = request.path is not None and not _inside(request.path, workspace)
        if request.kind == "write" and outside:
            return "file write outside the workspace"
        return None
