"""parent_event_id is set where an event has a parent, always an earlier event of the session."""

from __future__ import annotations

import anyio
from harness_hookspecs import (
    MessageCompleted,
    PermissionRequested,
    PermissionResolved,
    ToolCompleted,
    ToolStarted,
)

from harness_core import harness


@harness("linked")
async def linked(message, session):
    yield "Hel"
    yield "lo"
    yield MessageCompleted(text="Hello")
    yield ToolStarted(call_id="c1", name="shell", summary="ran a command")
    yield ToolStarted(call_id="c2", name="read", summary="read a file")
    yield PermissionRequested(request_id="p1", summary="write needs permission", tool="write")
    yield PermissionResolved(request_id="p1", decision="allow", source="policy")
    yield ToolCompleted(call_id="c2", name="read", summary="read a file")
    yield ToolCompleted(call_id="c1", name="shell", summary="ran a command")
    yield "Done"


def test_parents_link_the_pairs_and_nothing_else(make_controller, workspace):
    async def main():
        async with make_controller(linked) as c:
            ref = await c.open_session(harness="linked", workspace=workspace)
            await c.run_turn(ref, "go")
            await c.run_turn(ref, "again")
            return c.events(ref.session_id)

    events = anyio.run(main)
    by_id = {e.event_id: e for e in events}
    for event in events:
        if event.parent_event_id is not None:
            parent = by_id[event.parent_event_id]
            assert parent.sequence < event.sequence and parent.turn_id == event.turn_id

    def parent_type(event):
        return by_id[event.parent_event_id].type if event.parent_event_id else None

    first_turn = [e for e in events if e.turn_id == events[1].turn_id]
    pairs = [(e.type, parent_type(e)) for e in first_turn if e.parent_event_id]
    assert pairs == [
        ("message.completed", "message.delta"),
        ("permission.resolved", "permission.requested"),
        ("tool.completed", "tool.started"),
        ("tool.completed", "tool.started"),
        ("message.completed", "message.delta"),  # the function's whole text, after "Done"
    ]
    completed = [e for e in first_turn if e.type == "message.completed"]
    # each message names the first delta of its own text
    assert [by_id[c.parent_event_id].payload.text for c in completed] == ["Hel", "Done"]
    tools = {e.payload.call_id: e for e in first_turn if e.type == "tool.completed"}
    for call_id, done in tools.items():
        assert by_id[done.parent_event_id].payload.call_id == call_id
    second = [e for e in events if e.turn_id not in (None, events[1].turn_id)]
    first_completed = next(e for e in second if e.type == "message.completed")
    assert by_id[first_completed.parent_event_id].turn_id == first_completed.turn_id
    # everything else: none
    others = {e.type for e in events if e.parent_event_id is None}
    assert "turn.started" in others and "session.opened" in others
