"""The approval seam's models: what an adapter asks, and what the runtime answers.

An adapter that meets a permission request from its CLI builds a :class:`PermissionRequest` and
awaits ``context.request_permission(request)``; the runtime answers with a
:class:`PermissionDecision` (from the host's handler, a policy plugin's
``harness_permission_decide`` hook, or the posture's default; no answer in time is a deny with
``source="timeout"``). Both are frozen and plain data (strings, bools, a JSON-able mapping), so a
remote executor can carry them across processes.

``summary``, ``command`` and ``path`` are what a human or a command policy reads: bounded and
control-character free (build them with :func:`summarize_input`). ``input`` is the tool's own
input, kept only so an approver can return an edited copy; it never enters an event.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal, get_args

import attrs
from attrs import field, frozen

from . import bounds as _bounds
from .values import Value

PermissionBehavior = Literal["allow", "deny"]
PERMISSION_BEHAVIORS: tuple[str, ...] = get_args(PermissionBehavior)

PermissionSource = Literal["host", "policy", "timeout"]
PERMISSION_SOURCES: tuple[str, ...] = get_args(PermissionSource)

#: What the tool does, as far as a command policy cares.
ToolKind = Literal["shell", "write", "read", "fetch", "mcp", "other"]
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)

COMMAND_MAX = 4096
_PATH_MAX = 4096


def _frozen_json(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    data = dict(value or {})
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        raise ValueError("input must be JSON-serialisable") from None
    return MappingProxyType(data)


def _optional_frozen_json(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else _frozen_json(value)


def _optional_line(value: object) -> str | None:
    return None if value is None else safe_line(value)


def _new_request_id() -> str:
    return "perm_" + uuid.uuid4().hex[:20]


def safe_line(text: object, limit: int = _bounds.STATUS_MAX) -> str:
    """``text`` on one line: control characters (newlines too) become spaces, runs of spaces
    collapse, cut to ``limit`` with an ellipsis. Never empty (``"-"``)."""
    value = str(text)
    cleaned = "".join(" " if _bounds.has_control(ch) else ch for ch in value)
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1] + "\u2026"
    return cleaned or "-"


def summarize_input(tool: str, command: str | None = None, path: str | None = None) -> str:
    """The one-line, bounded summary of a tool call an approver and the audit trail read."""
    detail = command if command is not None else path
    return safe_line(f"{tool}: {detail}" if detail else tool)


@frozen(repr=False, eq=False)
class PermissionRequest(Value):
    """One tool call the harness wants to make, as the host sees it."""

    TYPE: ClassVar[str] = "permission.request"
    tool: str = field(validator=_bounds.bounded(1, 128))
    summary: str = field(validator=_bounds.bounded(1, _bounds.STATUS_MAX))
    kind: str = field(default="other", validator=attrs.validators.in_(TOOL_KINDS))
    #: the shell command (kind ``shell``), one line, bounded
    command: str | None = field(default=None, validator=_bounds.optional_bounded(1, COMMAND_MAX))
    #: the file the call writes or reads (kinds ``write``/``read``)
    path: str | None = field(default=None, validator=_bounds.optional_bounded(1, _PATH_MAX))
    #: the tool's own input (JSON-able); only for returning an edited copy, never recorded
    input: Mapping[str, Any] = field(converter=_frozen_json, factory=dict, repr=False)
    #: whether the harness can run the call with an edited input
    can_edit: bool = False
    request_id: str = field(factory=_new_request_id, validator=_bounds.bounded(1, 256))
    #: filled by the runtime: the session and turn the request belongs to
    session_id: str | None = None
    turn_id: str | None = None

    @classmethod
    def for_tool(
        cls,
        tool: str,
        *,
        kind: str = "other",
        command: str | None = None,
        path: str | None = None,
        input: Mapping[str, Any] | None = None,
        can_edit: bool = False,
        request_id: str | None = None,
    ) -> PermissionRequest:
        """Build a request from raw tool data: names, commands and paths are made safe here."""
        tool_name = safe_line(tool, 128)
        line = None if command is None else safe_line(command, COMMAND_MAX)
        file = None if path is None else safe_line(path, _PATH_MAX)
        return cls(
            tool=tool_name,
            summary=summarize_input(tool_name, line, file),
            kind=kind if kind in TOOL_KINDS else "other",
            command=line,
            path=file,
            input=input or {},
            can_edit=can_edit,
            request_id=safe_line(request_id, 256) if request_id else _new_request_id(),
        )


@frozen(repr=False, eq=False)
class PermissionDecision(Value):
    """The answer. ``reason`` is a safe, bounded sentence an approver authored (shown to the
    model on a deny where the CLI passes one on); ``updated_input`` runs the call with an edited
    input (only where the request says ``can_edit``)."""

    TYPE: ClassVar[str] = "permission.decision"
    #: ``allow`` or ``deny``
    behavior: str = field(validator=attrs.validators.in_(PERMISSION_BEHAVIORS))
    #: why (one line, bounded): the approver's sentence, the policy rule, or the timeout
    reason: str | None = field(default=None, converter=_optional_line)
    #: an edited copy of the request's ``input`` to run instead (allow only, where ``can_edit``)
    updated_input: Mapping[str, Any] | None = field(
        default=None, converter=_optional_frozen_json, repr=False
    )
    #: who answered: ``host`` (the host's handler, or a person through it), ``policy`` (the
    #: posture, the command policy or a ``harness_permission_decide`` plugin) or ``timeout``
    #: (nobody answered in time: a deny). The runtime sets it on what it records.
    source: str = field(default="host", validator=attrs.validators.in_(PERMISSION_SOURCES))

    @property
    def allowed(self) -> bool:
        """Whether the call may run (``behavior == "allow"``)."""
        return self.behavior == "allow"

    @classmethod
    def allow(cls, updated_input: Mapping[str, Any] | None = None) -> PermissionDecision:
        """Allow the call, optionally with an edited input."""
        return cls("allow", updated_input=updated_input)

    @classmethod
    def deny(cls, reason: str | None = None) -> PermissionDecision:
        """Deny the call; ``reason`` is recorded and, where the CLI passes one on, shown to
        the model."""
        return cls("deny", reason=reason)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (what travels to a remote executor and back)."""
        return {
            "behavior": self.behavior,
            "reason": self.reason,
            "updated_input": None if self.updated_input is None else dict(self.updated_input),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PermissionDecision:
        return cls(
            behavior=str(data.get("behavior")),
            reason=data.get("reason"),
            updated_input=data.get("updated_input"),
            source=str(data.get("source", "host")),
        )


def request_to_dict(request: PermissionRequest) -> dict[str, Any]:
    """Plain JSON-able data of a request (``input`` included: the approver may edit it)."""
    data = attrs.asdict(request, recurse=False)
    data["input"] = dict(request.input)
    return data


def request_from_dict(data: Mapping[str, Any]) -> PermissionRequest:
    known = {a.name for a in attrs.fields(PermissionRequest)}
    return PermissionRequest(**{k: v for k, v in data.items() if k in known})
