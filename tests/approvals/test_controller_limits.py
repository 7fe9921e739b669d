"""The seam and the budgets through a real Controller, with one-function harnesses."""

from __future__ import annotations

import os
import time

import anyio
import pytest
from harness_hookspecs import (
    HarnessError,
    PermissionDecision,
    PermissionRequest,
    Usage,
    UsageReported,
    hookimpl,
)

from harness_core import Controller, harness, plugins_from
from harness_core.approvals import PendingApprovals


@harness("asker", features=("resume", "cancel", "permissions"))
async def asker(message, session):
    decision = await session.request_permission(
        tool="Bash", kind="shell", command=message.content, input={"command": message.content}
    )
    if decision.allowed:
        return f"ran {dict(decision.updated_input or {}).get('command', message.content)}"
    return f"refused: {decision.reason}"


@harness("spender", features=("resume", "cancel", "usage"))
async def spender(message, session):
    """Three usage reports of 0.05 USD; ``hang`` first starts a process, and waits forever
    after the reports."""
    if message.content == "hang":
        process = await session.context.spawn(["sleep", "60"])
        session.state["pid"] = process.pid
    for _ in range(3):
        yield UsageReported(usage=Usage(input_tokens=10, output_tokens=2, cost_usd=0.05))
    if message.content == "hang":
        await anyio.sleep(60)
    yield "done"


@harness("sleeper")
async def sleeper(message, session):
    await anyio.sleep(30)
    return "late"


def _controller(tmp_path, *plugins, **kwargs) -> Controller:
    return Controller(
        plugins=plugins_from(list(plugins) or [asker, spender, sleeper]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
        **kwargs,
    )


def _run(tmp_path, prompts, harness_name="asker", posture="strict", budget=None, **kwargs):
    async def main():
        async with _controller(tmp_path, **kwargs) as c:
            ref = await c.open_session(
                harness=harness_name, workspace=str(tmp_path), posture=posture, budget=budget
            )
            results = []
            for prompt in prompts:
                try:
                    results.append(await c.run_turn(ref, prompt))
                except HarnessError as error:
                    results.append(error)
            return results, c.export(ref.session_id)

    return anyio.run(main)


def _types(result):
    return [e.type for e in result.events]


@pytest.mark.parametrize("answer", ["allow", "deny", "edit"])
def test_a_function_harness_asks_the_host_and_both_sides_are_recorded(tmp_path, answer):
    seen: list[PermissionRequest] = []

    async def handler(request):
        seen.append(request)
        if answer == "edit":
            return PermissionDecision.allow({"command": "make lint"})
        return PermissionDecision.allow() if answer == "allow" else PermissionDecision.deny("no")

    (result,), _ = _run(tmp_path, ["make test"], permission_handler=handler)
    assert _types(result) == [
        "turn.started",
        "permission.requested",
        "permission.resolved",
        "message.completed",
        "turn.completed",
    ]
    request = seen[0]
    assert request.session_id == result.session.session_id and request.turn_id == result.turn_id
    requested, resolved = result.events[1].payload, result.events[2].payload
    assert requested.summary == "Bash: make test" and requested.tool == "Bash"
    assert resolved.request_id == requested.request_id == request.request_id
    assert resolved.source == "host"
    expected = {"allow": "ran make test", "deny": "refused: no", "edit": "refused: "}[answer]
    if answer == "edit":  # the request said it cannot run an edited input: a deny
        assert resolved.decision == "deny" and result.text.startswith(expected)
    else:
        assert result.text == expected and resolved.decision == answer


def test_an_editable_request_runs_the_edited_input(tmp_path):
    @harness("editor", features=("permissions",))
    async def editor(message, session):
        decision = await session.request_permission(
            PermissionRequest.for_tool(
                "Bash", command="rm x", input={"command": "rm x"}, can_edit=True
            )
        )
        return dict(decision.updated_input or {}).get("command", "-")

    async def handler(request):
        return PermissionDecision.allow({"command": "ls"})

    async def main():
        async with _controller(tmp_path, editor, permission_handler=handler) as c:
            ref = await c.open_session(harness="editor", workspace=str(tmp_path), posture="strict")
            return await c.run_turn(ref, "go")

    result = anyio.run(main)
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert result.text == "ls" and resolved.edited and resolved.decision == "allow"


def test_no_answer_is_denied_by_timeout_within_the_timeout(tmp_path):
    async def never(request):
        await anyio.sleep(60)

    started = time.monotonic()
    (result,), _ = _run(tmp_path, ["make"], permission_handler=never, permission_timeout=0.3)
    assert time.monotonic() - started < 5
    resolved = next(e.payload for e in result.events if e.type == "permission.resolved")
    assert (resolved.decision, resolved.source) == ("deny", "timeout")
    assert result.status == "completed" and result.text.startswith("refused")


def test_a_policy_plugin_answers_what_the_host_leaves_open(tmp_path):
    class OnlyLs:
        @hookimpl
        def harness_permission_decide(self, request, context):
            return PermissionDecision.allow() if request.command == "ls" else None

    async def abstain(request):
        return None

    async def main():
        async with _controller(tmp_path, asker, OnlyLs(), permission_handler=abstain) as c:
            ref = await c.open_session(harness="asker", workspace=str(tmp_path), posture="strict")
            return (await c.run_turn(ref, "ls"), await c.run_turn(ref, "make"))

    ls, make = anyio.run(main)
    assert ls.text == "ran ls" and make.text.startswith("refused")
    resolved = [e.payload for r in (ls, make) for e in r.events if e.type == "permission.resolved"]
    assert [(p.decision, p.source) for p in resolved] == [("allow", "policy"), ("deny", "policy")]


def test_pending_approvals_answered_from_another_task(tmp_path):
    pending = PendingApprovals()

    async def main():
        async with _controller(tmp_path, permission_handler=pending) as c:
            ref = await c.open_session(harness="asker", workspace=str(tmp_path), posture="strict")
            async with anyio.create_task_group() as tg:

                async def approve():
                    while not pending.pending(ref.session_id):
                        await anyio.sleep(0.01)
                    # the request is in the ledger while it waits (a viewer shows it)
                    assert "permission.requested" in [e.type for e in c.events(ref.session_id)]
                    (request,) = pending.pending(ref.session_id)
                    pending.answer(ref.session_id, request.request_id, PermissionDecision.allow())

                tg.start_soon(approve)
                return await c.run_turn(ref, "make")

    assert anyio.run(main).text == "ran make"


def test_strict_is_refused_on_a_harness_that_cannot_ask(tmp_path):
    async def main():
        async with _controller(tmp_path) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="sleeper", workspace=str(tmp_path), posture="strict")
            return info.value

    error = anyio.run(main)
    assert error.reason == "unsupported-feature" and "strict" in error.hint


def test_usage_is_summed_per_turn_and_per_session_and_in_the_export(tmp_path):
    (first, second), bundle = _run(tmp_path, ["a", "b"], "spender", posture="auto")
    assert first.usage.cost_usd == pytest.approx(0.15) and first.usage.input_tokens == 30
    assert first.usage.reasoning_tokens is None  # unknown stays unknown
    assert second.session_usage.cost_usd == pytest.approx(0.30)
    assert second.session_usage.output_tokens == 12
    reports = [e for e in bundle["events"] if e["type"] == "usage"]
    assert len(reports) == 6
    total = sum(e["payload"]["usage"]["cost_usd"] for e in reports)
    assert bundle["usage"]["cost_usd"] == pytest.approx(total)
    assert bundle["usage"]["input_tokens"] == 60 and bundle["usage"]["reasoning_tokens"] is None


def test_a_cost_budget_crossed_mid_turn_ends_it_and_kills_its_process(tmp_path):
    async def main():
        async with _controller(tmp_path, budget={"max_cost_usd": 0.1}) as c:
            ref = await c.open_session(harness="spender", workspace=str(tmp_path))
            live = c.live(ref.session_id)
            with anyio.fail_after(20):
                result = await c.run_turn(ref, "hang")
            assert live.context.turn_processes == []
            with pytest.raises(HarnessError) as info:
                await c.run_turn(ref, "again")
            return result, info.value, spender.__harness_adapter__._sessions[ref.session_id]

    result, refused, session = anyio.run(main)
    terminal = result.events[-1].payload
    assert result.status == "failed" and terminal.reason == "limit-exceeded"
    assert terminal.hint == "max_cost_usd 0.1 reached"
    assert [e.type for e in result.events].count("usage") == 2
    with pytest.raises(ProcessLookupError):
        os.kill(session.state["pid"], 0)
    assert refused.reason == "limit-exceeded" and "max_cost_usd" in refused.hint


def test_max_turns_refuses_the_next_turn_and_counts_after_resume(tmp_path):
    (one, two), _ = _run(tmp_path, ["a", "b"], "spender", posture="auto", budget={"max_turns": 1})
    assert one.ok and isinstance(two, HarnessError)
    assert (two.reason, two.hint) == ("limit-exceeded", "max_turns 1 reached")

    async def resume():
        async with _controller(tmp_path) as c:
            with pytest.raises(HarnessError) as info:
                ref = await c.resume_session(one.session.session_id, budget={"max_turns": 1})
                await c.run_turn(ref, "c")
            return info.value

    assert anyio.run(resume).reason == "limit-exceeded"


def test_session_wall_clock_ends_the_turn_as_limit_exceeded(tmp_path):
    (result,), _ = _run(tmp_path, ["x"], "sleeper", posture="auto", budget={"max_wall_clock": 0.5})
    terminal = result.events[-1].payload
    assert (terminal.reason, terminal.hint) == ("limit-exceeded", "max_wall_clock 0.5s exceeded")


def test_bad_budget_is_one_clear_line(tmp_path):
    with pytest.raises(HarnessError) as info:
        _controller(tmp_path, budget={"max_cost_usd": -1})
    assert info.value.reason == "invalid-request" and "max_cost_usd" in info.value.hint


def test_conformance_approvals_check_passes_asks_and_skips_with_a_reason(tmp_path):
    from harness_hookspecs import ConformanceProfile

    from harness_core.conformance import run_conformance

    def approvals_of(report):
        return next(c for c in report.checks if c.name == "approvals")

    profile = ConformanceProfile(prompt="ls", approval_prompt="make test")
    asked = approvals_of(run_conformance(asker, profile=profile, timeout=30))
    assert asked.passed and asked.detail == "1 request(s) asked the host, denied and recorded"
    unnamed = approvals_of(run_conformance(asker, profile=ConformanceProfile(prompt="ls")))
    assert unnamed.passed and unnamed.detail.startswith("skipped: the profile names no")
    cannot = approvals_of(run_conformance(spender, profile=ConformanceProfile(prompt="x")))
    assert cannot.passed and cannot.detail.startswith("skipped: the harness cannot ask")


def test_conformance_approvals_check_fails_a_harness_that_claims_but_never_asks(tmp_path):
    from harness_hookspecs import ConformanceProfile

    from harness_core.conformance import run_conformance

    @harness("pretender", features=("resume", "cancel", "permissions"))
    async def pretender(message, session):
        return "did it without asking"

    report = run_conformance(
        pretender, profile=ConformanceProfile(prompt="x", approval_prompt="make test")
    )
    check = next(c for c in report.checks if c.name == "approvals")
    assert not check.passed and "asked the host nothing" in check.detail


def test_a_resumed_session_keeps_its_wall_clock_from_its_opening(tmp_path):
    """The wall clock counts from ``session.opened`` in the ledger, not from this controller."""

    async def first():
        async with _controller(tmp_path) as c:
            ref = await c.open_session(harness="spender", workspace=str(tmp_path), posture="auto")
            assert (await c.run_turn(ref, "a")).ok
            return ref.session_id

    session_id = anyio.run(first)
    time.sleep(1.2)

    async def resume(limit):
        async with _controller(tmp_path) as c:
            before = len(c.ledger.events(session_id))
            try:
                ref = await c.resume_session(session_id, budget={"max_wall_clock": limit})
            except HarnessError as error:  # spent already: refused before session.resumed
                assert len(c.ledger.events(session_id)) == before
                return None, error
            elapsed = anyio.current_time() - c.live(session_id).limits.started
            return elapsed, await c.run_turn(ref, "b")

    _, refused = anyio.run(resume, 1.0)
    assert isinstance(refused, HarnessError), refused
    assert (refused.reason, refused.hint) == ("limit-exceeded", "max_wall_clock 1s exceeded")
    elapsed, result = anyio.run(resume, 60.0)
    assert result.ok and elapsed >= 1.2
