"""Codex asks the host through ``codex app-server`` (approval policy ``untrusted``): the real
CLI against the fake model, which scripts the ``exec_command`` call."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from harness_cli_kit.approval_testing import (
    APPROVED,
    ApprovalScenarios,
    approval_script,
)
from harness_cli_kit.testing import assert_no_process
from harness_hookspecs import PermissionDecision

from harness_core.testing.fake_model import FakeModelServer, ToolCall

TOUCH = ToolCall("exec_command", {"cmd": f"touch {APPROVED}"})


class TestApprovals(ApprovalScenarios):
    touch = TOUCH
    shell_tool = "shell"

    @staticmethod
    def remove(victim: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": f"rm -rf {victim}"})


def test_describe_claims_permissions_and_strict_opens(cli):
    descriptor = cli.controller().describe("codex")
    assert "permissions" in descriptor.features
    assert "requestApproval" in descriptor.details["approvals"]


@pytest.mark.cli
def test_a_denied_command_is_reported_as_denied_and_the_turn_goes_on(cli):
    from harness_cli_kit.approval_testing import approval_turn

    async def deny(request):
        return PermissionDecision.deny("no")

    result, _ = approval_turn(cli, TOUCH, deny)
    # decline (not cancel): the model is told and finishes its turn
    assert result.status == "completed" and result.text == "Finished.", result
    tool = next(e.payload for e in result.events if e.type == "tool.completed")
    assert not tool.ok and "denied" in tool.summary
    started = next(e.payload for e in result.events if e.type == "tool.started")
    assert started.summary == f"shell: touch {APPROVED}"


@pytest.mark.cli
def test_cancel_while_the_host_is_asked_leaves_no_process(cli):
    asked = anyio.Event()

    async def wait_forever(request):
        asked.set()
        await anyio.sleep(3600)

    async def main(server):
        async with cli.controller(
            turn_timeout=90, permission_handler=wait_forever, permission_timeout=300
        ) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=cli.config(cli.url(server)),
                posture="strict",
            )
            events = []
            async with controller.turn(ref, f"create {APPROVED}") as turn:
                async for event in turn:
                    events.append(event)
                    if event.type == "permission.requested":
                        with anyio.fail_after(10):
                            await asked.wait()
                        context = controller.live(ref.session_id).context
                        leader = context.turn_processes[0].pid
                        started = time.monotonic()
                        await controller.cancel_turn(ref, turn.turn_id)
            assert controller.live(ref.session_id).context.turn_processes == []
            return events, leader, time.monotonic() - started

    with FakeModelServer(approval_script(TOUCH)) as server:
        events, leader, seconds = anyio.run(main, server)
    assert events[-1].type == "turn.cancelled", events[-1]
    assert_one_terminal_of(events)
    assert_no_process(leader)
    assert seconds < 10, seconds
    assert not (Path(cli.workspace) / APPROVED).exists()


def assert_one_terminal_of(events):
    terminals = [e for e in events if e.terminal]
    assert len(terminals) == 1 and terminals[0] is events[-1], events


@pytest.mark.cli
def test_the_conformance_kit_sees_codex_ask_the_host(cli):
    from harness_core.conformance import run_conformance

    report = run_conformance("codex", timeout=60)
    checks = {check.name: check for check in report.checks}
    assert all(check.passed for check in report.checks), report.checks
    # not the "skipped" note: the kit's turn asked its host, which denied, and it was recorded
    assert checks["approvals"].detail.startswith("1 request(s) asked the host"), checks


@pytest.mark.cli
def test_strict_asks_even_for_a_read_only_command(cli):
    from harness_cli_kit.approval_testing import approval_turn

    asked = []

    async def allow(request):
        asked.append(request)
        return PermissionDecision.allow()

    result, _ = approval_turn(cli, ToolCall("exec_command", {"cmd": "ls"}), allow)
    assert result.status == "completed", result
    assert [(r.tool, r.kind, r.command) for r in asked] == [("shell", "shell", "ls")]
    completed = next(e.payload for e in result.events if e.type == "tool.completed")
    assert completed.ok and completed.summary == "ran a shell command (exit code 0)"


#: A model Codex 0.171 has metadata for: only then does it offer its ``apply_patch`` tool.
PATCH_MODEL = "gpt-5.5"
PATCH = f"*** Begin Patch\n*** Add File: {APPROVED}\n+hello\n*** End Patch\n"


@pytest.mark.cli
@pytest.mark.parametrize("answer", ["allow", "deny"])
def test_a_patch_asks_the_host_as_a_file_write(cli, answer):
    import dataclasses

    from harness_cli_kit.approval_testing import approval_turn

    asked = []

    async def handler(request):
        asked.append(request)
        return PermissionDecision.allow() if answer == "allow" else PermissionDecision.deny("no")

    patching = dataclasses.replace(cli, model=PATCH_MODEL)
    result, _ = approval_turn(patching, ToolCall("apply_patch", PATCH), handler)
    assert result.status == "completed", result
    written = Path(cli.workspace) / APPROVED
    assert written.exists() == (answer == "allow")
    # item/fileChange/requestApproval names only the item: the path comes from its changes
    assert [(r.tool, r.kind, r.path) for r in asked] == [("apply_patch", "write", str(written))]
    started = next(e.payload for e in result.events if e.type == "tool.started")
    assert started.summary == f"apply_patch: {written}"
    completed = next(e.payload for e in result.events if e.type == "tool.completed")
    assert completed.ok == (answer == "allow")
