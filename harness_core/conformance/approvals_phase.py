"""The kit's approvals phase: does a harness that declares ``permissions`` really ask the host?

A harness without the feature must refuse the strict posture (``unsupported-feature``), never
run it unchecked. A harness with it opens a strict session under a host handler that denies;
with the profile's ``approval_prompt`` the kit runs one turn and checks that the host was asked,
that each ``permission.requested`` has exactly one ``permission.resolved`` (``deny``, source
``host``) and that the turn still ends with exactly one terminal.
"""

from __future__ import annotations

from typing import Any

import anyio
from attrs import define, field
from harness_hookspecs import (
    TERMINAL_TYPES,
    HarnessError,
    PermissionDecision,
    PermissionRequest,
)

#: Seconds the kit's host takes at most to answer (it answers at once).
KIT_PERMISSION_TIMEOUT = 30.0


@define
class ApprovalsSeen:
    note: str = ""
    problems: list[str] = field(factory=list)
    not_run: str | None = None
    #: nothing to exercise for this harness (``note`` says why): SKIP, neither PASS nor FAIL
    skipped: bool = False


async def approvals_phase(run: Any) -> None:
    seen = run.approvals = ApprovalsSeen()
    if run.descriptor is None:
        seen.not_run = "the harness was not described"
        return
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> PermissionDecision:
        asked.append(request)
        return PermissionDecision.deny("the conformance kit denies every request")

    controller = run.factory(
        plugins=run.plugins,
        ledger=run.ledger,
        state_dir=run.root / "state",
        turn_timeout=run.profile.turn_timeout or run.timeout,
        permission_handler=deny,
        permission_timeout=KIT_PERMISSION_TIMEOUT,
    )
    async with controller:
        try:
            with anyio.fail_after(run.timeout):
                ref = await controller.open_session(
                    harness=run.name,
                    target=run.profile.target,
                    posture="strict",
                    **run.session_kwargs(),
                )
        except (HarnessError, TimeoutError) as error:
            reason = getattr(error, "reason", "timeout")
            if "permissions" in run.features:
                seen.problems.append(f"a strict session did not open ({reason})")
            elif reason == "unsupported-feature":
                seen.note, seen.skipped = "the harness cannot ask the host (strict refused)", True
            else:
                seen.problems.append(f"strict was refused with {reason}, not unsupported-feature")
            return
        if "permissions" not in run.features:
            seen.problems.append("a harness that cannot ask the host accepted the strict posture")
        elif run.profile.approval_prompt is None:
            seen.note, seen.skipped = "the profile names no approval_prompt (strict opens)", True
        else:
            await _approval_turn(controller, ref, run.profile.approval_prompt, asked, seen)
        await controller.close_session(ref)


async def _approval_turn(
    controller: Any, ref: Any, prompt: str, asked: list[PermissionRequest], seen: ApprovalsSeen
) -> None:
    result = await controller.run_turn(ref, prompt)
    events = list(result.events)
    requested = [e for e in events if e.type == "permission.requested"]
    resolved = [e for e in events if e.type == "permission.resolved"]
    if not requested or not asked:
        seen.problems.append("the approval prompt asked the host nothing")
    for event in requested:
        answers = [r for r in resolved if r.payload.request_id == event.payload.request_id]
        if len(answers) != 1 or answers[0].sequence < event.sequence:
            seen.problems.append(f"request {event.payload.request_id} not resolved exactly once")
        elif (answers[0].payload.decision, answers[0].payload.source) != ("deny", "host"):
            seen.problems.append("a request the host denied was not recorded as a host deny")
    terminals = [e for e in events if e.type in TERMINAL_TYPES]
    if len(terminals) != 1 or terminals[0] is not events[-1]:
        seen.problems.append("the turn did not end with exactly one terminal event")
    seen.note = f"{len(requested)} request(s) asked the host, denied and recorded"
