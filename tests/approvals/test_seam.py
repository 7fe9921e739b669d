"""The approval seam without a CLI: models, the order of answers, timeouts and the records."""

from __future__ import annotations

import json

import anyio
import pytest
from harness_hookspecs import (
    PermissionDecision,
    PermissionRequest,
    PermissionRequested,
    PermissionResolved,
    hookimpl,
)
from harness_hookspecs.permissions import request_from_dict, request_to_dict

from harness_core.approvals import Approvals
from harness_core.command_policy import CommandPolicy

pytestmark = pytest.mark.anyio


class _Context:
    def __init__(self, posture: str = "strict", workspace: str = "/work/space", config=None):
        self.posture = posture
        self.workspace = workspace
        self.config = config or {}


def _bash(command: str, **extra) -> PermissionRequest:
    return PermissionRequest.for_tool("Bash", kind="shell", command=command, **extra)


def test_request_is_made_safe_and_travels_as_plain_json():
    request = _bash("touch a\x1b[31m.txt\nrm b", input={"command": "touch a.txt"})
    assert request.command == "touch a [31m.txt rm b"
    assert request.summary.startswith("Bash: touch a")
    assert len(PermissionRequest.for_tool("Bash", command="x" * 9000).summary) == 240
    back = request_from_dict(json.loads(json.dumps(request_to_dict(request))))
    assert back == request and dict(back.input) == {"command": "touch a.txt"}
    decision = PermissionDecision.allow({"command": "ls"})
    assert PermissionDecision.from_dict(json.loads(json.dumps(decision.to_dict()))) == decision
    assert PermissionDecision.deny("no\nway").reason == "no way"
    with pytest.raises(ValueError):
        PermissionDecision("maybe")
    with pytest.raises(ValueError):
        PermissionRequest.for_tool("Bash", input={"x": object()})


async def _resolve(approvals: Approvals, request: PermissionRequest, context=None):
    recorded: list = []
    decision = await approvals.resolve(request, context or _Context(), recorded.append)
    return decision, recorded


async def test_the_host_handler_answers_first_and_is_recorded_with_source_host():
    seen: list[PermissionRequest] = []

    async def handler(request: PermissionRequest) -> PermissionDecision:
        seen.append(request)
        return PermissionDecision.deny("not today")

    decision, recorded = await _resolve(Approvals(handler=handler), _bash("touch x"))
    assert (decision.behavior, decision.source, decision.reason) == ("deny", "host", "not today")
    assert [type(p) for p in recorded] == [PermissionRequested, PermissionResolved]
    assert recorded[0].tool == "Bash" and recorded[0].summary == "Bash: touch x"
    assert recorded[1] == PermissionResolved(
        request_id=seen[0].request_id, decision="deny", source="host", reason="not today"
    )


async def test_a_handler_without_an_opinion_leaves_it_to_the_policy_hook_then_the_default():
    async def abstain(request):
        return None

    class Policy:
        @hookimpl
        def harness_permission_decide(self, request, context):
            return PermissionDecision.allow() if request.command == "ls" else None

    from harness_core.plugin_manager import Plugins

    plugins = Plugins(load_entry_points=False)
    plugins.pm.register(Policy())
    approvals = Approvals(handler=abstain, hook=plugins.hook)
    allowed, _ = await _resolve(approvals, _bash("ls"))
    assert (allowed.behavior, allowed.source) == ("allow", "policy")
    denied, recorded = await _resolve(approvals, _bash("make"))
    assert (denied.behavior, denied.source) == ("deny", "policy")
    assert recorded[-1].decision == "deny"


async def test_no_answer_in_time_is_a_deny_with_source_timeout():
    async def never(request):
        await anyio.sleep(30)

    start = anyio.current_time()
    decision, recorded = await _resolve(Approvals(handler=never, timeout=0.2), _bash("touch x"))
    assert anyio.current_time() - start < 2
    assert (decision.behavior, decision.source) == ("deny", "timeout")
    assert recorded[-1].source == "timeout"


async def test_a_remote_approvers_timeout_deny_stays_a_timeout_and_nothing_else_does():
    """A handler whose own timer ran out (the Temporal workflow's) denies as a timeout; any
    other source a handler names is the host's (a handler cannot pass for the policy, nor
    allow as a timeout)."""
    answers = {
        "timed-out": PermissionDecision("deny", reason="no answer in time", source="timeout"),
        "policy": PermissionDecision("deny", source="policy"),
        "allow-timeout": PermissionDecision("allow", source="timeout"),
    }
    for name, expected in [("timed-out", "timeout"), ("policy", "host"), ("allow-timeout", "host")]:

        async def remote(request, answer=answers[name]):
            return answer

        decision, recorded = await _resolve(Approvals(handler=remote), _bash("touch x"))
        assert decision.source == recorded[-1].source == expected, name


async def test_a_failing_or_foreign_handler_denies():
    async def boom(request):
        raise RuntimeError("secret provider text")

    async def foreign(request):
        return True

    for handler in (boom, foreign):
        decision, _ = await _resolve(Approvals(handler=handler), _bash("touch x"))
        assert decision.behavior == "deny" and "secret" not in (decision.reason or "")


async def test_an_edit_the_harness_cannot_run_is_a_deny():
    async def edit(request):
        return PermissionDecision.allow({"command": "touch safe.txt"})

    approvals = Approvals(handler=edit)
    decision, recorded = await _resolve(approvals, _bash("touch x"))
    assert decision.behavior == "deny"
    editable, recorded = await _resolve(approvals, _bash("touch x", can_edit=True))
    assert editable.allowed and dict(editable.updated_input or {}) == {"command": "touch safe.txt"}
    assert recorded[-1].edited is True


async def test_postures_dangerous_allows_auto_runs_the_command_policy_strict_asks():
    asked: list[str] = []

    async def handler(request):
        asked.append(request.command)
        return PermissionDecision.allow()

    approvals = Approvals(handler=handler, policy=CommandPolicy(ask=["git push*"]))
    decision, _ = await _resolve(approvals, _bash("rm -rf /"), _Context("dangerous"))
    assert decision.allowed and decision.source == "policy"
    decision, _ = await _resolve(approvals, _bash("rm -rf /"), _Context("auto"))
    assert (decision.behavior, decision.source) == ("deny", "policy")
    assert decision.reason == "recursive or forced delete outside the workspace"
    decision, _ = await _resolve(approvals, _bash("make test"), _Context("auto"))
    assert decision.allowed and decision.source == "policy" and asked == []
    decision, _ = await _resolve(approvals, _bash("git push origin"), _Context("auto"))
    assert decision.allowed and decision.source == "host" and asked == ["git push origin"]
    decision, _ = await _resolve(approvals, _bash("make test"), _Context("strict"))
    assert decision.source == "host" and asked[-1] == "make test"


async def test_strict_without_any_approver_denies():
    decision, _ = await _resolve(Approvals(), _bash("touch x"))
    assert (decision.behavior, decision.source) == ("deny", "policy")


async def test_a_session_command_policy_replaces_the_controllers():
    context = _Context("auto", config={"command_policy": {"deny": ["make*"]}})
    decision, _ = await _resolve(Approvals(), _bash("make test"), context)
    assert decision.behavior == "deny"
    bad = _Context("auto", config={"command_policy": {"deny": "make*"}})
    decision, _ = await _resolve(Approvals(), _bash("ls"), bad)
    assert decision.behavior == "deny"


async def test_pending_approvals_park_until_answered_by_id():
    from harness_core.approvals import PendingApprovals

    seen: list[str] = []
    pending = PendingApprovals(on_request=lambda request: seen.append(request.request_id))
    approvals = Approvals(handler=pending, timeout=5)
    request = attrs_evolve(_bash("touch x"), session_id="s1")
    results: list = []

    async def ask():
        results.append(await approvals.resolve(request, _Context()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        with anyio.fail_after(2):
            while not pending.pending("s1"):
                await anyio.sleep(0.01)
        assert pending.pending("other") == [] and seen == [request.request_id]
        assert not pending.answer("s1", "nope", PermissionDecision.allow())
        assert pending.answer("s1", request.request_id, PermissionDecision.allow())
    assert results[0].allowed and results[0].source == "host"
    assert pending.pending() == []
    assert not pending.answer("s1", request.request_id, PermissionDecision.allow())


def attrs_evolve(instance, **changes):
    import attrs

    return attrs.evolve(instance, **changes)


def test_audit_summaries_are_bounded_one_line_and_mask_credentials():
    from harness_cli_kit.calls import audit_summary, call_facts, outcome_summary

    line = audit_summary("Bash", {"command": "API_KEY=sk-123 make\n\x1b[2Jdeploy " + "x" * 500})
    assert line.startswith("Bash: API_KEY=*** make [2Jdeploy") and len(line) == 240
    assert "sk-123" not in line and "\n" not in line
    assert audit_summary("write", {"filePath": "/ws/a.txt", "content": "secret"}) == (
        "write: /ws/a.txt"
    )
    assert audit_summary("Read", {"pattern": "x"}) is None
    assert call_facts("exec_command", {"cmd": ["bash", "-lc", "make test"]}) == (
        "shell",
        "make test",
        None,
    )
    assert call_facts("run_commands", {"commands": ["a", "b"]})[1] == "a; b"
    assert outcome_summary(exit_code=2) == "exit code 2" and outcome_summary() is None


async def test_auto_asks_the_host_for_what_the_rules_ask_and_denies_with_the_reason_without_one():
    asked: list[str] = []

    async def handler(request):
        asked.append(request.command)
        return PermissionDecision.deny("not today")

    context = _Context("auto")
    for command in ("cat ~/.ssh/id_rsa", "psql -c 'DROP TABLE x'"):
        decision, _ = await _resolve(Approvals(handler=handler), _bash(command), context)
        assert (decision.behavior, decision.source, decision.reason) == (
            "deny",
            "host",
            "not today",
        )
    assert asked == ["cat ~/.ssh/id_rsa", "psql -c 'DROP TABLE x'"]
    decision, recorded = await _resolve(Approvals(), _bash("cat ~/.ssh/id_rsa"), context)
    assert (decision.behavior, decision.source) == ("deny", "policy")
    assert decision.reason == ("reads or writes a credential store; no approver allowed the call")
    assert recorded[-1].reason == decision.reason  # permission.resolved carries it
    decision, _ = await _resolve(Approvals(), _bash("pytest -q"), context)
    assert decision.allowed and decision.source == "policy"
    # strict: nobody asked, no rule to quote
    decision, _ = await _resolve(Approvals(), _bash("pytest -q"), _Context("strict"))
    assert decision.reason == "no approver allowed the call"
