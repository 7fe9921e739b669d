"""The approval seam across Temporal: a harness on the worker asks
(``session.request_permission``), the host answers through the workflow's ``answer_permission``
update with the contract's ``PermissionDecision``, a workflow timer denies an unanswered request.
In-process worker on the dev server, PostgreSQL ledger, a one-function harness."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from executor_temporal.shapes import ATTEMPT_STARTED, ExecutorOptions
from harness_hookspecs import HarnessError, PermissionDecision

from harness_core import harness, plugins_from

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cancel import replay_all, with_worker

APPROVAL_TIMEOUT = 1.0


@harness("temporal-asker", features=("resume", "cancel", "permissions"))
async def asker(message, session):
    """Asks to run the prompt as a shell command; says what it ran or why not."""
    decision = await session.request_permission(
        tool="Bash",
        kind="shell",
        command=message.content,
        input={"command": message.content},
        can_edit=message.content.startswith("edit"),
    )
    if decision.allowed:
        return f"ran {dict(decision.updated_input or {}).get('command', message.content)}"
    return f"refused: {decision.reason}"


@pytest.fixture
def asker_session(temporal_address, postgresql_ledger_url, tmp_path, workspace):
    """``asker_session(body)``: with one worker that knows ``temporal-asker``, open a strict
    session, run ``body(controller, ref)``; then replay the session's workflow."""

    def run(body, **controller_kw):
        async def in_session(controller, client, queue):
            ref = await controller.open_session(
                harness="temporal-asker", workspace=workspace, posture="strict"
            )
            try:
                return ref.session_id, await body(controller, ref)
            finally:
                await controller.close_session(ref)

        session_id, result = anyio.run(
            lambda: with_worker(
                temporal_address,
                postgresql_ledger_url,
                tmp_path,
                in_session,
                ExecutorOptions(approval_timeout=APPROVAL_TIMEOUT),
                plugins_from([asker], entry_points=True),
                **controller_kw,
            )
        )
        replay_all(temporal_address, [session_id])
        return result

    return run


async def answer_each_request(controller, ref, prompt, answer):
    """Run a turn; on each ``permission.requested`` call ``answer(request_id)`` (or nothing).
    Returns the turn's events and, per answered request, seconds from the ``approve`` call to
    its ``permission.resolved`` in the ledger."""
    landed, asked_at = [], None
    async with controller.turn(ref, prompt) as turn:
        async for event in turn:
            if event.type == "permission.requested" and answer is not None:
                asked_at = time.monotonic()
                await answer(event.payload.request_id)
            if event.type == "permission.resolved" and asked_at is not None:
                landed.append(time.monotonic() - asked_at)
        summary = await turn.result()
    assert summary.status == "completed", summary
    return turn.events, landed


def outcome(events):
    resolved = next(e.payload for e in events if e.type == "permission.resolved")
    text = next(e.payload.text for e in events if e.type == "message.completed")
    return resolved.decision, resolved.source, text


def test_host_allows_denies_and_edits_through_the_update(asker_session):
    async def body(controller, ref):
        seen = {}

        async def allow(request_id):
            pending = await controller.pending_permissions(ref)
            seen["pending"] = pending
            seen["decision"] = await controller.approve(ref, request_id, PermissionDecision.allow())

        events, landed = await answer_each_request(controller, ref, "make test", allow)
        assert outcome(events) == ("allow", "host", "ran make test")
        print(f"approval: decision in the ledger {landed[0]:.3f} s after the approve call")
        assert landed[0] < 0.5, landed
        [request] = seen["pending"]  # the contract's request, as the workflow holds it
        assert (request.tool, request.command, request.kind) == ("Bash", "make test", "shell")
        assert request.session_id == ref.session_id and request.turn_id == events[0].turn_id
        assert dict(request.input) == {}  # not editable: the raw input stays on the worker
        assert seen["decision"] == PermissionDecision("allow", source="host")

        async def deny(request_id):
            await controller.approve(ref, request_id, PermissionDecision.deny("not now"))

        events, _ = await answer_each_request(controller, ref, "rm -rf build", deny)
        assert outcome(events) == ("deny", "host", "refused: not now")

        async def edit(request_id):
            edited = PermissionDecision.allow({"command": "edit make lint"})
            await controller.approve(ref, request_id, edited)

        events, _ = await answer_each_request(controller, ref, "edit make test", edit)
        assert outcome(events) == ("allow", "host", "ran edit make lint")
        resolved = next(e.payload for e in events if e.type == "permission.resolved")
        assert resolved.edited

    asker_session(body)


def test_unknown_or_answered_ids_are_refused_and_no_answer_times_out_to_deny(asker_session):
    async def body(controller, ref):
        refusals = []

        async def refused_then_allow(request_id):
            for wrong in ("perm_unknown", request_id + "x"):
                with pytest.raises(HarnessError) as unknown:
                    await controller.approve(ref, wrong, PermissionDecision.allow())
                refusals.append(unknown.value.reason)
            await controller.approve(ref, request_id, PermissionDecision.allow())
            with pytest.raises(HarnessError) as twice:  # answered: no longer pending
                await controller.approve(ref, request_id, PermissionDecision.deny())
            refusals.append(twice.value.reason)

        events, _ = await answer_each_request(controller, ref, "make test", refused_then_allow)
        assert outcome(events) == ("allow", "host", "ran make test")
        assert refusals == ["invalid-request"] * 3
        with pytest.raises(HarnessError) as wrong_type:
            await controller.approve(ref, "perm_x", True)  # type: ignore[arg-type]
        assert wrong_type.value.reason == "invalid-request"

        # nobody answers: the workflow's timer denies, recorded as a timeout
        started = time.monotonic()
        events, _ = await answer_each_request(controller, ref, "make deploy", None)
        took = time.monotonic() - started
        assert outcome(events) == ("deny", "timeout", "refused: no answer in time")
        print(f"approval timeout {APPROVAL_TIMEOUT} s: turn ended after {took:.2f} s")
        assert APPROVAL_TIMEOUT <= took < APPROVAL_TIMEOUT + 2.0, took
        request_id = next(e.payload.request_id for e in events if e.type == "permission.requested")
        with pytest.raises(HarnessError) as late:
            await controller.approve(ref, request_id, PermissionDecision.allow())
        assert late.value.reason == "invalid-request"
        assert await controller.pending_permissions(ref) == []

    asker_session(body)


def test_cancelling_a_turn_waiting_for_approval_ends_it_and_clears_the_request(asker_session):
    async def body(controller, ref):
        async with controller.turn(ref, "make test") as turn:
            async for event in turn:
                if event.type == "permission.requested":
                    while not await controller.pending_permissions(ref):
                        await anyio.sleep(0.02)
                    asked = time.monotonic()
                    await controller.cancel_turn(ref, turn.turn_id)
            summary = await turn.result()
        took = time.monotonic() - asked
        assert summary.status == "cancelled", summary
        assert turn.events[-1].type == "turn.cancelled" and took < 1.0, took
        assert await controller.pending_permissions(ref) == []
        following, _ = await answer_each_request(
            controller,
            ref,
            "make again",
            lambda request_id: controller.approve(ref, request_id, PermissionDecision.allow()),
        )
        assert outcome(following) == ("allow", "host", "ran make again")

    asker_session(body)


def test_a_permission_handler_on_the_temporal_controller_answers_like_on_the_local_one(
    asker_session,
):
    """The host passes the same async callable the local ``Controller`` takes."""
    seen = []

    async def handler(request):
        seen.append(request)
        if request.command == "make test":
            return PermissionDecision.allow()
        if request.command == "edit make test":
            return PermissionDecision.allow({"command": "edit make lint"})
        if request.command == "boom":
            raise RuntimeError("a handler bug")
        if request.command == "abstain":
            return None  # someone else may answer; nobody does: the workflow's timer denies
        return PermissionDecision.deny("not that")

    async def body(controller, ref):
        outcomes = {}
        for prompt in ("make test", "edit make test", "rm -rf build", "boom", "abstain"):
            summary = await controller.run_turn(ref, prompt)  # nobody iterates the events
            assert summary.status == "completed", summary
            events = controller.events(ref.session_id)
            turn = [e for e in events if e.turn_id == events[-1].turn_id]
            outcomes[prompt] = outcome(turn)
        return outcomes

    outcomes = asker_session(body, permission_handler=handler)
    assert outcomes == {
        "make test": ("allow", "host", "ran make test"),
        "edit make test": ("allow", "host", "ran edit make lint"),
        "rm -rf build": ("deny", "host", "refused: not that"),
        "boom": ("deny", "host", "refused: the approver failed"),
        "abstain": ("deny", "timeout", "refused: no answer in time"),
    }
    assert [r.command for r in seen] == [
        "make test", "edit make test", "rm -rf build", "boom", "abstain"
    ]  # fmt: skip
    assert all(r.session_id and r.turn_id for r in seen)


def test_a_retry_voids_the_requests_its_lost_attempt_left_pending(asker_session):
    """The worker starting a retry signals ``attempt_started`` (the failover test sees it in
    history); here the signal comes while an attempt is still asking: its request is denied and
    leaves the pending list, so no host answers a request nobody waits for."""

    async def body(controller, ref):
        handle = controller.client.get_workflow_handle(ref.session_id)

        async def void(request_id):
            while not await controller.pending_permissions(ref):
                await anyio.sleep(0.02)
            await handle.signal(ATTEMPT_STARTED, events_turn[0])

        events_turn = []
        async with controller.turn(ref, "make test") as turn:
            events_turn.append(turn.turn_id)
            async for event in turn:
                if event.type == "permission.requested":
                    await void(event.payload.request_id)
            await turn.result()
        assert outcome(turn.events) == (
            "deny",
            "host",
            "refused: the attempt that asked was lost",
        )
        assert await controller.pending_permissions(ref) == []

    asker_session(body)
