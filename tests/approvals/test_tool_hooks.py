"""Host hooks with matchers: before_tool answers first on the approval seam (deny with a
reason, allow, ask, edit), after_tool sees each matching call's outcome, off the turn."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import PermissionDecision, PermissionRequest

from harness_core import Controller, harness, plugins_from
from harness_core.approvals import Approvals
from harness_core.tool_hooks import ASK, ToolHook

pytestmark = pytest.mark.anyio


class _Context:
    def __init__(self, posture: str = "auto") -> None:
        self.posture = posture
        self.workspace = "/srv/ws"
        self.config: dict = {}


def _bash(command: str) -> PermissionRequest:
    return PermissionRequest.for_tool(
        "Bash", kind="shell", command=command, input={"command": command}, can_edit=True
    )


def _deny_push(request):
    return PermissionDecision.deny("pushing is for humans")


async def test_matchers():
    hook = ToolHook("before_tool", _deny_push, tool="Bash|Shell", command="git push*")
    assert hook.matches_request(_bash("git push origin main"))
    assert not hook.matches_request(_bash("git status"))
    assert not hook.matches_request(PermissionRequest.for_tool("Bashful", command="git push"))
    writes = ToolHook("before_tool", _deny_push, kind="write", path="/etc/*")
    assert writes.matches_request(PermissionRequest.for_tool("Write", kind="write", path="/etc/x"))
    assert not writes.matches_request(PermissionRequest.for_tool("Write", kind="write", path="a"))
    assert not writes.matches_request(_bash("/etc/x"))
    assert ToolHook("after_tool", print, tool="Bash", command="pytest*").matches_tool(
        "Bash", "Bash: pytest -q"
    )
    with pytest.raises(ValueError):
        ToolHook("during_tool", print)
    with pytest.raises(TypeError):
        ToolHook("before_tool", "not callable")


async def test_before_tool_answers_first_in_every_posture():
    hooks = (ToolHook("before_tool", _deny_push, tool="Bash", command="git push*"),)
    for posture in ("strict", "auto", "dangerous"):
        approvals = Approvals(handler=lambda r: PermissionDecision.allow(), hooks=hooks)
        decision = await approvals.resolve(_bash("git push origin main"), _Context(posture))
        assert (decision.behavior, decision.source, decision.reason) == (
            "deny",
            "host",
            "pushing is for humans",
        )
        other = await approvals.resolve(_bash("git status"), _Context(posture))
        assert other.allowed


async def test_before_tool_allow_ask_edit_and_failure():
    asked: list[str] = []

    async def handler(request):
        asked.append(request.command)
        return PermissionDecision.deny("handler says no")

    def allow(request):
        return PermissionDecision.allow()

    strict = Approvals(handler=handler, hooks=(ToolHook("before_tool", allow, command="make*"),))
    assert (await strict.resolve(_bash("make"), _Context("strict"))).source == "host"
    assert asked == []  # the hook's allow: nobody else asked
    # a hook's allow never lifts the command policy's deny
    lifted = Approvals(hooks=(ToolHook("before_tool", allow),))
    assert (await lifted.resolve(_bash("rm -rf /"), _Context("auto"))).behavior == "deny"
    # ASK: the host's handler is asked even where auto would allow
    asking = Approvals(handler=handler, hooks=(ToolHook("before_tool", lambda r: ASK),))
    decision = await asking.resolve(_bash("ls"), _Context("auto"))
    assert decision.reason == "handler says no" and asked == ["ls"]
    # an edit runs the edited input
    edit = ToolHook("before_tool", lambda r: PermissionDecision.allow({"command": "git status"}))
    decision = await Approvals(hooks=(edit,)).resolve(_bash("git push"), _Context("auto"))
    assert decision.allowed and decision.updated_input == {"command": "git status"}

    def broken(request):
        raise RuntimeError("bug")

    for bad in (broken, lambda r: "yes please"):
        failed = Approvals(hooks=(ToolHook("before_tool", bad),))
        decision = await failed.resolve(_bash("ls"), _Context("auto"))
        assert (decision.behavior, decision.reason) == ("deny", "a before_tool hook failed")
    # no opinion: the posture decides
    quiet = Approvals(hooks=(ToolHook("before_tool", lambda r: None),))
    assert (await quiet.resolve(_bash("ls"), _Context("auto"))).source == "policy"


async def test_a_hook_that_never_answers_times_out():
    async def never(request):
        await anyio.sleep(3600)

    approvals = Approvals(timeout=0.2, hooks=(ToolHook("before_tool", never),))
    decision = await approvals.resolve(_bash("ls"), _Context("auto"))
    assert (decision.behavior, decision.source) == ("deny", "timeout")


@harness("pusher", features=("resume", "cancel", "permissions"))
async def pusher(message, session):
    """A harness that runs what it is told, as a model would: the call's answer (the
    reason of a deny) is what its next step reads."""
    decision = await session.request_permission(
        tool="Bash", kind="shell", command=message.content, input={"command": message.content}
    )
    if not decision.allowed:
        return f"not run: {decision.reason}"
    return "ran it"


def test_before_tool_denies_git_push_on_a_one_function_harness(tmp_path):
    hooks = [ToolHook("before_tool", _deny_push, tool="Bash", command="git push*")]

    async def main():
        async with Controller(
            plugins=plugins_from([pusher]),
            ledger=f"sqlite:///{tmp_path}/l.sqlite",
            state_dir=tmp_path / "state",
            tool_hooks=hooks,
        ) as c:
            ref = await c.open_session(harness="pusher", workspace=str(tmp_path))
            pushed = await c.run_turn(ref, "git push origin main")
            status = await c.run_turn(ref, "git status")
            return pushed, status

    pushed, status = anyio.run(main)
    assert pushed.text == "not run: pushing is for humans"
    resolved = next(e.payload for e in pushed.events if e.type == "permission.resolved")
    assert (resolved.decision, resolved.source, resolved.reason) == (
        "deny",
        "host",
        "pushing is for humans",
    )
    assert status.text == "ran it"


@harness("tester")
async def tool_runner(message, session):
    """Runs one tool call per prompt word, then answers with what the host's after_tool hooks
    added for each (as it would put it before its next model request)."""
    from harness_hookspecs import ToolCompleted, ToolStarted

    added = []
    for index, command in enumerate(message.content.split(",")):
        call_id = f"call-{index}"
        yield ToolStarted(call_id=call_id, name="Bash", summary=f"Bash: {command}")
        yield ToolCompleted(call_id=call_id, name="Bash", ok=True, summary="ran")
        added.append(await session.after_tool_context(call_id))
    yield repr(added)


def _run_tester(tmp_path, hooks, prompt, *, settle=True):
    """One turn of ``prompt``, bounded (no hook's long wait may hold it); ``settle``: then wait
    for the after_tool hooks beside it. The result, and the hooks still running."""

    async def main():
        async with Controller(
            plugins=plugins_from([tool_runner]),
            ledger=f"sqlite:///{tmp_path}/l.sqlite",
            state_dir=tmp_path / "state",
            tool_hooks=hooks,
        ) as c:
            ref = await c.open_session(harness="tester", workspace=str(tmp_path))
            with anyio.fail_after(20):
                result = await c.run_turn(ref, prompt)
            if settle:
                with anyio.fail_after(10):
                    while c.after_tool.pending:
                        await anyio.sleep(0.01)
            return result, c.after_tool.pending

    return anyio.run(main)


def test_after_tool_context_reaches_the_harness_before_it_goes_on(tmp_path):
    seen = []

    async def skipped(event, started):
        await anyio.sleep(0.05)  # the harness waits for it
        return f"{started.payload.summary} skipped 3 tests: say so"

    def observer(event, started):  # no adds_context: off the turn, its answer reaches no model
        seen.append(event.payload.call_id)
        return "never delivered"

    hooks = [
        ToolHook("after_tool", skipped, tool="Bash", command="pytest*", adds_context=True),
        ToolHook("after_tool", lambda e, s: "  ", tool="Bash", adds_context=True),  # blank: none
        ToolHook("after_tool", observer, tool="Bash"),
    ]
    result, _ = _run_tester(tmp_path, hooks, "pytest -q,ls")
    assert result.ok, result
    assert result.text == repr(["Bash: pytest -q skipped 3 tests: say so", None])
    assert sorted(seen) == ["call-0", "call-1"]
    assert [e.type for e in result.events].count("tool.completed") == 2


def test_without_context_hooks_the_harness_does_not_wait(tmp_path):
    async def slow(event, started):
        await anyio.sleep(30)
        return "an observer's answer reaches no model"

    hooks = [ToolHook("after_tool", slow, tool="Bash")]  # observes only: off the turn
    result, pending = _run_tester(tmp_path, hooks, "pytest -q", settle=False)  # not the 30 s
    assert pending == 1  # still running beside the turn
    assert result.text == repr([None])


def test_a_context_hook_past_the_wait_is_left_behind(tmp_path, monkeypatch):
    import harness_core.tool_hooks as tool_hooks

    monkeypatch.setattr(tool_hooks, "CONTEXT_WAIT", 0.2)

    async def never(event, started):
        await anyio.sleep(60)
        return "too late"

    async def quick(event, started):
        return "in time"

    hooks = [
        ToolHook("after_tool", never, tool="Bash", adds_context=True),
        ToolHook("after_tool", quick, tool="Bash", adds_context=True),
    ]
    result, _ = _run_tester(tmp_path, hooks, "make", settle=False)
    assert result.ok
    assert result.text == repr(["in time"])  # what was in when the wait ran out


def test_context_is_cut_at_its_bound(tmp_path):
    from harness_core.tool_hooks import CONTEXT_MAX

    hooks = [ToolHook("after_tool", lambda e, s: "x" * (CONTEXT_MAX * 2), adds_context=True)]
    result, _ = _run_tester(tmp_path, hooks, "make")
    assert result.text == repr(["x" * CONTEXT_MAX])
