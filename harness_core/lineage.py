"""``parent_event_id``: which earlier event of the session an event answers or completes.

One :class:`Lineage` per live session, asked by the controller for each event it stamps:

- ``message.completed`` (assistant) -> the first ``message.delta`` of the text it completes
  (deltas stream first; a parent is always an earlier event);
- ``tool.completed`` -> the ``tool.started`` with the same ``call_id``;
- ``permission.resolved`` -> the ``permission.requested`` with the same ``request_id``;
- ``turn.started`` -> the previous turn's decision when the host says so (the host loop), and a
  structured-output retry's ``status`` -> its turn's ``turn.started`` (both set explicitly with
  :meth:`Lineage.expect`).

Everything else has none. A turn's end forgets its open deltas, tools and permissions.
"""

from __future__ import annotations

from harness_hookspecs import (
    MessageCompleted,
    MessageDelta,
    Payload,
    PermissionRequested,
    PermissionResolved,
    ToolCompleted,
    ToolStarted,
)
from harness_hookspecs.events import TERMINAL_TYPES

#: The payloads whose events may have, or be, a parent (the rest only end a turn, or nothing).
_LINKED = (
    MessageDelta,
    MessageCompleted,
    ToolStarted,
    ToolCompleted,
    PermissionRequested,
    PermissionResolved,
)


class Lineage:
    __slots__ = ("_explicit", "_first_delta", "_permissions", "_tools")

    def __init__(self) -> None:
        self._first_delta: str | None = None
        self._tools: dict[str, str] = {}
        self._permissions: dict[str, str] = {}
        self._explicit: str | None = None

    def expect(self, parent_event_id: str | None) -> None:
        """The next event's parent, said by the runtime (a turn's input, a retry)."""
        self._explicit = parent_event_id

    def parent(self, payload: Payload, event_id: str) -> str | None:
        """The parent of the event ``event_id`` carrying ``payload`` (and remember it)."""
        if self._explicit is not None:
            explicit, self._explicit = self._explicit, None
            return explicit
        if not isinstance(payload, _LINKED):
            if payload.TYPE in TERMINAL_TYPES:
                self._first_delta = None
                self._tools.clear()
                self._permissions.clear()
            return None
        if isinstance(payload, MessageDelta):
            if self._first_delta is None:
                self._first_delta = event_id
            return None
        if isinstance(payload, MessageCompleted):
            first, self._first_delta = self._first_delta, None
            return first if payload.role == "assistant" else None
        if isinstance(payload, ToolStarted):
            self._tools[payload.call_id] = event_id
            return None
        if isinstance(payload, ToolCompleted):
            return self._tools.pop(payload.call_id, None)
        if isinstance(payload, PermissionRequested):
            self._permissions[payload.request_id] = event_id
            return None
        if isinstance(payload, PermissionResolved):
            return self._permissions.pop(payload.request_id, None)
        return None
