"""The host loop's actions go through the approval seam: the host's handler, the posture's
command policy and the session budget apply to them as to a harness's own tool calls; a denied
action is not run and comes back to the harness as a result saying so."""

from __future__ import annotations

import json

import anyio
import pytest
from harness_hookspecs import HarnessError, PermissionDecision

from harness_core import Controller, harness, plugins_from
from harness_core.host_loop import STEP_SCHEMA, host_loop

ACTIONS = '{"step": "actions", "actions": ["count files", "drop the database"]}'
DONE = '{"step": "done", "answer": "all good"}'


def decider(name, answers):
    """A one-function harness answering from ``answers``; it records the prompts it gets."""
    seen: list[str] = []
    queue = list(answers)

    @harness(name, features=("resume", "cancel", "permissions"))
    async def run(message, session):
        seen.append(message.content)
        return queue.pop(0)

    return run, seen


def loop_run(tmp_path, plugin, *, posture="strict", handler=None, budget=None, **loop_kwargs):
    async def main():
        async with Controller(
            plugins=plugins_from([plugin]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            permission_handler=handler,
            permission_timeout=5,
        ) as c:
            name = plugin.__harness_adapter__.name
            ref = await c.open_session(
                harness=name, workspace=str(tmp_path), posture=posture, budget=budget
            )
            loop = await host_loop(c, ref, "tidy up", schema=STEP_SCHEMA, **loop_kwargs)
            return loop, c.events(ref.session_id)

    return anyio.run(main)


def test_each_action_is_asked_and_a_denied_one_is_reported_not_run(tmp_path):
    plugin, seen = decider("d-deny", [ACTIONS, DONE])
    asked = []
    ran = []

    async def handler(request):
        asked.append(request)
        if request.command == "count files":
            return PermissionDecision.allow()
        return PermissionDecision.deny("not on a Friday")

    async def run(action):
        ran.append(action)
        return "12 files"

    loop, events = loop_run(tmp_path, plugin, handler=handler, execute_action=run)
    assert loop.status == "done", loop
    assert ran == ["count files"]  # the denied action never ran
    # the host saw each action as a request of this session and of the deciding turn
    first_turn = loop.steps[0].turn
    assert [(r.tool, r.command, r.summary) for r in asked] == [
        ("host_action", "count files", "host_action: count files"),
        ("host_action", "drop the database", "host_action: drop the database"),
    ]
    assert {(r.session_id, r.turn_id) for r in asked} == {
        (first_turn.session.session_id, first_turn.turn_id)
    }
    step = loop.steps[0]
    assert [(d.behavior, d.source) for d in step.approvals] == [("allow", "host"), ("deny", "host")]
    expected = {
        "results": [
            {"action": "count files", "ok": True, "result": "12 files"},
            {"action": "drop the database", "ok": False, "denied": "not on a Friday"},
        ]
    }
    assert step.results == expected
    # the harness got the denial as a result, and the ledger keeps it in the next turn's input
    assert json.loads(seen[1].split("\n")[1]) == expected
    started = [e for e in events if e.type == "turn.started"]
    assert json.loads(started[1].payload.prompt.split("\n", 1)[1]) == expected
    assert started[1].parent_event_id == first_turn.events[-1].event_id


def test_the_auto_posture_policy_denies_a_destructive_action_without_asking(tmp_path):
    plugin, seen = decider("d-auto", ['{"step": "actions", "actions": ["rm -rf /"]}', DONE])
    asked, ran = [], []

    async def handler(request):
        asked.append(request)
        return PermissionDecision.allow()

    loop, _ = loop_run(tmp_path, plugin, posture="auto", handler=handler, execute_action=ran.append)
    assert loop.status == "done" and ran == [] and asked == []
    [decision] = loop.steps[0].approvals
    assert (decision.behavior, decision.source) == ("deny", "policy")
    assert loop.steps[0].results["results"][0]["denied"] == decision.reason
    assert decision.reason in seen[1]


def test_no_approver_in_strict_denies_every_action(tmp_path):
    plugin, _ = decider("d-none", [ACTIONS, DONE])
    ran: list[str] = []
    loop, _ = loop_run(tmp_path, plugin, execute_action=ran.append)
    assert ran == [] and [d.behavior for d in loop.steps[0].approvals] == ["deny", "deny"]


def test_a_failing_action_is_reported_without_its_text(tmp_path):
    plugin, _ = decider("d-fail", ['{"step": "actions", "actions": ["boom"]}', DONE])

    async def allow(request):
        return PermissionDecision.allow()

    def explode(action):
        raise RuntimeError("internal secret text")

    loop, _ = loop_run(tmp_path, plugin, handler=allow, execute_action=explode)
    assert loop.steps[0].results == {
        "results": [{"action": "boom", "ok": False, "error": "the action failed"}]
    }


def test_the_session_budget_stops_the_loop(tmp_path):
    plugin, _ = decider("d-budget", [ACTIONS] * 3)
    loop, events = loop_run(
        tmp_path, plugin, budget={"max_turns": 2}, execute=lambda decision: "ok"
    )
    assert loop.status == "budget" and loop.reason == "max_turns 2 reached"
    assert len(loop.steps) == 2
    assert [e.type for e in events].count("turn.started") == 2


def test_execute_or_execute_action_exactly_one(tmp_path):
    plugin, _ = decider("d-args", [DONE])
    for kwargs in ({}, {"execute": print, "execute_action": print}):
        with pytest.raises(HarnessError) as error:
            loop_run(tmp_path, plugin, **kwargs)
        assert error.value.reason == "invalid-request"
