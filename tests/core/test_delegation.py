"""Delegation (issue 32): a session's turn runs another harness as a child session.

One-function harnesses on both sides (the real CLIs are in plugins/mcp-bridge/tests): the
parent calls ``session.run_agent``; the child's record and ``session.opened`` name the parent
and the parent's ``tool.started``; postures and grants never widen; depth and fan-out are
bounded; the child's usage counts against the parent's budget as it happens; cancelling the
parent cancels the child; closing the parent closes the child.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from harness_hookspecs import HarnessError, Usage

from harness_core import Controller, Result, harness, plugins_from
from harness_core.delegation import ChildProfile, Delegation, children_of

FEATURES = ("resume", "cancel", "usage")


@harness("helper", features=FEATURES)
async def helper(message, session):
    if "slow" in message.content:
        await anyio.sleep(60)
    return Result(
        text=f"helper says: {message.content}",
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.004),
    )


@harness("boss", features=FEATURES)
async def boss(message, session):
    """Delegates to the harness named by the prompt's first word, the rest as its prompt."""
    name, _, rest = message.content.partition(" ")
    try:
        answer = await session.run_agent(name, rest or "hello")
    except HarnessError as error:
        return f"refused: {error.reason}: {error.hint}"
    return Result(
        text=f"boss heard: {answer.text} [{answer.session_id}]",
        usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.001),
    )


@harness("looper", features=FEATURES)
async def looper(message, session):
    """Delegates to itself until refused; says how deep it got."""
    try:
        answer = await session.run_agent("looper", message.content)
    except HarnessError as error:
        return f"stopped: {error.reason}: {error.hint}"
    return f"{answer.text} <"


@harness("fanner", features=FEATURES)
async def fanner(message, session):
    answers = []
    for index in range(5):
        try:
            answer = await session.run_agent("helper", f"part {index}")
        except HarnessError as error:
            answers.append(f"refused {error.reason}: {error.hint}")
            break
        answers.append(answer.text)
    return " | ".join(answers)


@harness("wide", features=FEATURES)
async def wide(message, session):
    try:
        await session.run_agent("helper", "x", posture="dangerous")
    except HarnessError as error:
        return f"refused: {error.reason}: {error.hint}"
    return "opened"


PROFILES = {name: ChildProfile() for name in ("helper", "boss", "looper")}


def controller(tmp_path, *, delegation: Delegation | None = None, **options: Any) -> Controller:
    return Controller(
        plugins=plugins_from([helper, boss, looper, fanner, wide]),
        ledger=f"sqlite:///{tmp_path}/ledger.db",
        state_dir=tmp_path / "state",
        delegation=delegation if delegation is not None else Delegation(PROFILES),
        **options,
    )


def test_a_child_session_names_its_parent_and_answers_the_parents_turn(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            result = await c.run_turn(ref, "helper what is 2+2")
            records = {r.session_id: r for r in c.sessions()}
            children = {r.session_id: c.events(r.session_id) for r in records.values()}
            return ref, result, records, children

    ref, result, records, events_of = anyio.run(main)
    assert result.status == "completed", result
    assert result.text.startswith("boss heard: helper says: what is 2+2")
    [child] = [r for r in records.values() if r.parent_session_id == ref.session_id]
    assert child.ref.harness == "helper"
    assert child.session_id in result.text
    started = [e for e in result.events if e.type == "tool.started"]
    assert [e.payload.name for e in started] == ["run_agent"]
    assert child.parent_event_id == started[0].event_id
    assert [e.type for e in result.events if e.type.startswith("tool.")] == [
        "tool.started",
        "tool.completed",
    ]
    child_events = events_of[child.session_id]
    opened = child_events[0].payload
    assert child_events[0].type == "session.opened"
    assert (opened.parent_session_id, opened.parent_event_id) == (
        ref.session_id,
        started[0].event_id,
    )
    assert records[ref.session_id].parent_session_id is None
    # inherits agent, user and posture
    assert (child.agent, child.user, child.posture) == (
        records[ref.session_id].agent,
        records[ref.session_id].user,
        records[ref.session_id].posture,
    )
    # the parent's total counts the child's usage; its own does not
    assert result.usage.cost_usd == pytest.approx(0.001)


def test_closing_the_parent_closes_the_child(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            await c.run_turn(ref, "helper hi")
            [child] = [r for r in c.sessions() if r.parent_session_id == ref.session_id]
            assert c.ledger.get_session(child.session_id).status == "open"
            await c.close_session(ref)
            return c.ledger.get_session(child.session_id), c.events(child.session_id)

    record, events = anyio.run(main)
    assert record.status == "closed"
    assert events[-1].type == "session.closed"


def test_delegation_is_refused_unless_the_host_allows_it(tmp_path):
    async def main():
        async with Controller(
            plugins=plugins_from([helper, boss]),
            ledger=f"sqlite:///{tmp_path}/ledger.db",
            state_dir=tmp_path / "state",
        ) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            return await c.run_turn(ref, "helper hi"), c.sessions()

    result, sessions = anyio.run(main)
    assert result.text.startswith("refused: policy-refused")
    assert len(sessions) == 1


def test_an_unknown_harness_is_a_refusal_and_nothing_opens(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            # "fanner" is installed but not a harness the host delegates to
            first = await c.run_turn(ref, "nosuch hi")
            second = await c.run_turn(ref, "fanner hi")
            return first, second, c.sessions()

    first, second, sessions = anyio.run(main)
    assert first.text == "refused: invalid-request: unknown harness 'nosuch'"
    assert second.text == "refused: invalid-request: unknown harness 'fanner'"
    assert len(sessions) == 1


def test_a_wider_posture_than_the_parents_is_refused_and_nothing_opens(tmp_path):
    async def main():
        async with controller(
            tmp_path, delegation=Delegation({"helper": ChildProfile()}), dangerous_grant=True
        ) as c:
            ref = await c.open_session(harness="wide", workspace=str(tmp_path), posture="auto")
            return await c.run_turn(ref, "go"), c.sessions()

    result, sessions = anyio.run(main)
    assert (
        result.text == "refused: policy-refused: posture dangerous is wider than the parent's auto"
    )
    assert len(sessions) == 1


def test_depth_is_bounded(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="looper", workspace=str(tmp_path))
            return await c.run_turn(ref, "loop"), c.sessions()

    result, sessions = anyio.run(main)
    # depth 0 -> 1 -> 2; the session at depth 2 is refused
    assert result.text == "stopped: limit-exceeded: delegation depth 2 reached < <"
    assert len(sessions) == 3


def test_fan_out_is_bounded(tmp_path):
    async def main():
        async with controller(
            tmp_path, delegation=Delegation({"helper": ChildProfile()}, max_fan_out=2)
        ) as c:
            ref = await c.open_session(harness="fanner", workspace=str(tmp_path))
            return await c.run_turn(ref, "go"), c.sessions()

    result, sessions = anyio.run(main)
    parts = result.text.split(" | ")
    assert parts[:2] == ["helper says: part 0", "helper says: part 1"]
    assert parts[2] == "refused limit-exceeded: delegation fan-out 2 reached"
    assert len(sessions) == 3


def test_a_parent_budget_crossed_in_a_child_ends_both_limit_exceeded(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            # each helper turn costs 0.004: the second crosses the parent's 0.006
            ref = await c.open_session(
                harness="fanner", workspace=str(tmp_path), budget={"max_cost_usd": 0.006}
            )
            result = await c.run_turn(ref, "go")
            children = children_of(c.ledger, ref.session_id)
            child_results = [c.events(r.session_id) for r in children]
            return result, child_results, c.live(ref).limits

    result, child_events, limits = anyio.run(main)
    assert result.status == "failed" and result.reason == "limit-exceeded", result
    assert len(child_events) == 2
    last = [e for e in child_events[-1] if e.type.startswith("turn.")][-1]
    assert last.type == "turn.failed" and last.payload.reason == "limit-exceeded"
    assert "max_cost_usd" in last.payload.hint
    # the total never passes the budget by more than one usage report
    assert limits.total.cost_usd <= 0.006 + 0.004
    assert limits.usage is None  # the parent itself reported nothing


def test_a_spent_parent_budget_refuses_a_child_before_it_opens(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(
                harness="fanner", workspace=str(tmp_path), budget={"max_cost_usd": 0.004}
            )
            result = await c.run_turn(ref, "go")
            return result, c.sessions()

    result, sessions = anyio.run(main)
    # the first child spends all of it (0.004 reaches the limit): both end limit-exceeded
    assert result.reason == "limit-exceeded"
    assert len(sessions) == 2


def test_cancelling_the_parent_cancels_the_child(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            async with c.turn(ref, "helper slow please") as turn:
                async for event in turn:
                    if event.type == "tool.started":
                        await anyio.sleep(0.3)
                        await c.cancel_turn(ref)
            [child] = [r for r in c.sessions() if r.parent_session_id == ref.session_id]
            return turn.result(), c.events(child.session_id)

    result, child_events = anyio.run(main)
    assert result.status == "cancelled"
    terminals = [e for e in child_events if e.type.startswith("turn.") and e.type != "turn.started"]
    assert [e.type for e in terminals] == ["turn.cancelled"]


@harness("again", features=FEATURES)
async def again(message, session):
    """Asks the helper twice in one child session, then once more in a new one."""
    first = await session.run_agent("helper", "one")
    second = await session.run_agent("helper", "two", session=first.session_id)
    try:
        await session.run_agent("looper", "three", session=first.session_id)
    except HarnessError as error:
        other = error.hint
    return f"{first.session_id == second.session_id} {second.text} / {other}"


def test_a_call_can_continue_its_child_session(tmp_path):
    async def main():
        async with Controller(
            plugins=plugins_from([again, helper, looper]),
            ledger=f"sqlite:///{tmp_path}/ledger.db",
            state_dir=tmp_path / "state",
            delegation=Delegation(PROFILES),
        ) as c:
            ref = await c.open_session(
                harness="again", workspace=str(tmp_path), budget={"max_cost_usd": 1.0}
            )
            result = await c.run_turn(ref, "go")
            [child] = children_of(c.ledger, ref.session_id)
            child_live = c.live(child.session_id)
            events = c.events(child.session_id)
            return result, events, child_live.limits, c.live(ref).limits

    result, events, child_limits, parent_limits = anyio.run(main)
    assert result.text.startswith("True helper says: two / ")
    assert "runs another harness" in result.text
    assert [e.type for e in events].count("turn.started") == 2
    # the continued child's budget: what the parent has left (1.0 - 0.004) plus what the
    # child already spent of it (its own total counts that 0.004 again)
    assert child_limits.budget.max_cost_usd == pytest.approx(1.0)
    assert parent_limits.total.cost_usd == pytest.approx(0.008)
    assert child_limits.total.cost_usd == pytest.approx(0.008)


def test_a_call_for_a_closed_parent_is_refused_and_opens_nothing(tmp_path):
    from harness_hookspecs.host_tools import ToolCaller

    from harness_core.delegation import delegation_tool

    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="boss", workspace=str(tmp_path))
            await c.close_session(ref)
            tool = delegation_tool(c)
            caller = ToolCaller(session_id=ref.session_id, harness="boss", turn_id="t1")
            with pytest.raises(HarnessError) as refused:
                await tool.function({"harness": "helper", "prompt": "hi"}, caller)
            return refused.value, c.sessions()

    error, sessions = anyio.run(main)
    assert error.reason == "session-closed"
    assert len(sessions) == 1


def test_a_resumed_parent_counts_what_its_children_spent(tmp_path):
    async def first():
        async with controller(tmp_path) as c:
            ref = await c.open_session(
                harness="boss", workspace=str(tmp_path), budget={"max_cost_usd": 0.007}
            )
            await c.run_turn(ref, "helper one")  # 0.004 in the child, 0.001 its own
            return ref.session_id

    async def second(session_id):
        async with controller(tmp_path) as c:
            await c.resume_session(session_id, budget={"max_cost_usd": 0.007})
            total = c.live(session_id).limits.total.cost_usd
            [child] = children_of(c.ledger, session_id)
            status = c.ledger.get_session(child.session_id).status
            result = await c.run_turn(session_id, "helper two")  # the child crosses 0.007
            return total, status, result

    session_id = anyio.run(first)
    total, status, result = anyio.run(second, session_id)
    assert total == pytest.approx(0.005)
    assert status == "closed"  # a released child is closed when its parent is resumed
    assert result.reason == "limit-exceeded"
