"""Pi's RPC mode (``pi --mode rpc``) as the adapter speaks it: the commands it writes on stdin
and the answers to the extension UI requests pi writes on stdout (pure: bytes in, bytes out).

The shipped ``extensions/approvals.ts`` asks the host through an ``editor`` dialog titled
:data:`PERMISSION_TITLE` whose prefill is the tool call as JSON; the answer's ``value`` is the
decision as JSON (``{"allow": bool, "input"?: {...}, "reason"?: str}``). Any other dialog is
dismissed (``cancelled``): nothing waits on a UI that is not there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_cli_kit import safe_id, safe_name, safe_prompt
from harness_cli_kit.calls import permission_request
from harness_hookspecs import PermissionDecision, PermissionRequest

PERMISSION_TITLE = "harness-permission"
#: The dialogs pi blocks on until an ``extension_ui_response`` comes back.
DIALOGS = frozenset({"select", "confirm", "input", "editor"})
#: The structured answer tool ``extensions/structured_output.ts`` registers.
ANSWER_TOOL = "structured_output"
STATE_ID = "harness-state"
PROMPT_ID = "harness-prompt"
BRANCH_ID = "harness-branch"


def extension(name: str) -> str:
    """The path of a shipped extension (package data next to this module: pi reads it as a
    file, so the package is never run from a zip; ``importlib.resources`` cost ~2 ms a turn)."""
    return str(Path(__file__).resolve().parent / "extensions" / name)


def line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def turn_commands(prompt: str) -> bytes:
    """What a turn writes first: ask for the session id, then send the prompt. A leading ``/``
    gets a space: pi would run it as an extension command (``/mcp setup`` writes config)."""
    message = safe_prompt(prompt, ("/",))
    return line({"id": STATE_ID, "type": "get_state"}) + line(
        {"id": PROMPT_ID, "type": "prompt", "message": message}
    )


def steer_command(text: str) -> bytes:
    """The RPC ``steer`` command for the host's text (a leading ``/`` gets a space, as for a
    prompt: pi refuses extension commands in a steer)."""
    return line({"type": "steer", "message": safe_prompt(text, ("/",))})


def branch_command(before: str | None) -> bytes:
    """Branch the opened session into a new one: ``fork`` before the user message entry
    ``before`` (the new session ends where that message's turn began), or ``clone`` of the
    whole active branch (``None``). Sent alone: pi handles each stdin line as it comes, so the
    turn's other commands wait for its answer (:class:`~harness_pi.stream.PiStream`)."""
    if before is None:
        return line({"id": BRANCH_ID, "type": "clone"})
    return line({"id": BRANCH_ID, "type": "fork", "entryId": before})


def is_permission(data: Mapping[str, Any]) -> bool:
    return data.get("method") == "editor" and data.get("title") == PERMISSION_TITLE


def permission_of(data: Mapping[str, Any]) -> PermissionRequest | None:
    """The request an approval dialog carries, or ``None`` when its prefill is unreadable."""
    try:
        call = json.loads(data.get("prefill") or "")
    except (TypeError, ValueError):
        return None
    if not isinstance(call, Mapping):
        return None
    arguments = call.get("input") if isinstance(call.get("input"), Mapping) else {}
    return permission_request(
        safe_name(call.get("tool")),
        arguments,
        request_id=safe_id(call.get("toolCallId")) or safe_id(data.get("id")),
        can_edit=True,
    )


def decision_answer(request_id: Any, decision: PermissionDecision) -> bytes:
    """The ``extension_ui_response`` for an approval dialog."""
    value: dict[str, Any] = {"allow": decision.allowed}
    if decision.allowed and decision.updated_input is not None:
        value["input"] = dict(decision.updated_input)
    if not decision.allowed:
        value["reason"] = decision.reason or "denied by the host"
    return line({"type": "extension_ui_response", "id": request_id, "value": json.dumps(value)})


def dismissed(request_id: Any) -> bytes:
    return line({"type": "extension_ui_response", "id": request_id, "cancelled": True})
