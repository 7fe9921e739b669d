"""parent_event_id is set where an event has a parent, always an earlier event of the session."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import (
    HarnessError,
    MessageCompleted,
    PermissionRequested,
    PermissionResolved,
    Status,
    ToolCompleted,
    ToolStarted,
    Usage,
    UsageReported,
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


@harness("loose-ends")
async def loose_ends(message, session):
    """Pairs broken the ways a real harness breaks them: a completion with no start, a
    user-visible message, events in between, a tool left open at the turn's end."""
    if message.content == "first":
        yield ToolStarted(call_id="open", name="shell", summary="never completed")
        yield ToolStarted(call_id="c1", name="shell", summary="ran a command")
        yield Status(message="working")  # a non-linked event between a pair forgets nothing
        yield UsageReported(usage=Usage(input_tokens=1, output_tokens=1))
        yield ToolCompleted(call_id="c1", name="shell")
        yield ToolCompleted(call_id="stray", name="shell")  # no start: no parent, no failure
        yield PermissionResolved(request_id="stray", decision="allow", source="policy")
        yield "echo"
        yield MessageCompleted(text="what the user typed", role="user")
    else:
        # the tool left open last turn is forgotten at that turn's end
        yield ToolCompleted(call_id="open", name="shell")


def test_unpaired_and_interleaved_events_get_the_right_parent_or_none(make_controller, workspace):
    async def main():
        async with make_controller(loose_ends) as c:
            ref = await c.open_session(harness="loose-ends", workspace=workspace)
            first = await c.run_turn(ref, "first")
            second = await c.run_turn(ref, "second")
            return first, second, c.events(ref.session_id)

    first, second, events = anyio.run(main)
    assert first.status == "completed" and second.status == "completed"
    by_id = {e.event_id: e for e in events}
    completed = [e for e in first.events if e.type == "tool.completed"]
    assert [e.payload.call_id for e in completed] == ["c1", "stray"]
    assert by_id[completed[0].parent_event_id].payload.call_id == "c1"
    assert completed[1].parent_event_id is None
    resolved = next(e for e in first.events if e.type == "permission.resolved")
    assert resolved.parent_event_id is None
    user_message = next(e for e in first.events if e.type == "message.completed")
    assert user_message.payload.role == "user" and user_message.parent_event_id is None
    late = next(e for e in second.events if e.type == "tool.completed")
    assert late.payload.call_id == "open" and late.parent_event_id is None


def test_a_turns_parent_must_be_an_earlier_event_of_the_same_session(make_controller, workspace):
    async def main():
        async with make_controller(linked) as c:
            ref = await c.open_session(harness="linked", workspace=workspace)
            other = await c.open_session(harness="linked", workspace=workspace)
            opened = c.events(ref.session_id)
            first = opened[0]  # session.opened: sequence 1, the earliest a parent can be
            result = await c.run_turn(ref, "go", parent_event_id=first.event_id)
            events = c.events(ref.session_id)
            last = events[-1]
            refused = []
            for candidate in (
                last.event_id[: -len(str(last.sequence))] + str(last.sequence + 1),  # not yet
                last.event_id[: -len(str(last.sequence))] + "0",  # before the first
                c.events(other.session_id)[0].event_id,  # another session's first event
                "not-an-event",
            ):
                with pytest.raises(HarnessError) as caught:
                    await c.run_turn(ref, "again", parent_event_id=candidate)
                refused.append((candidate, caught.value))
            accepted = await c.run_turn(ref, "again", parent_event_id=last.event_id)
            return first, result, refused, accepted, last

    first, result, refused, accepted, last = anyio.run(main)
    assert first.sequence == 1
    assert result.events[0].type == "turn.started"
    assert result.events[0].parent_event_id == first.event_id
    for candidate, error in refused:
        assert error.reason == "invalid-request", candidate
        assert "parent_event_id is not an event of this session" in str(error), candidate
    assert accepted.events[0].parent_event_id == last.event_id
