"""Approval scenarios every adapter that asks the host runs against its real CLI.

``class TestApprovals(ApprovalScenarios): touch = ToolCall("Bash", {...})`` next to the suite's
``cli`` fixture: the fake model scripts a tool call that creates ``approved.txt`` (and one that
runs ``rm -rf`` on a directory outside the workspace); a host handler allows it (the file is
written), denies it (no file, exactly one terminal), or never answers (a deny with
``source="timeout"`` within the approval timeout); the ``auto`` posture's command policy blocks
the ``rm -rf`` with nobody asked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from .testing import CliUnderTest

APPROVED = "approved.txt"


def approval_script(tool_call: Any) -> list[Any]:
    from harness_core.testing.fake_model import Match, Step

    return [
        Step(text="Asking to run it.", tool_calls=[tool_call]),
        Step(text="Finished.", match=Match(tool_result=True)),
    ]


def approval_turn(
    cli: CliUnderTest,
    tool_call: Any,
    handler: Any,
    *,
    posture: str = "strict",
    permission_timeout: float = 30.0,
    timeout: float = 90.0,
    serve: Any = None,
    config: Any = None,
) -> tuple[Any, float]:
    """One turn whose model asks for ``tool_call``, answered by ``handler``; the result and how
    long the turn took (none of its processes is left). ``serve(script)`` starts the fake model
    and ``config(server)`` gives the session config when the CLI needs its own."""
    from harness_core.testing.fake_model import FakeModelServer

    serve = serve or FakeModelServer
    config = config or (lambda server: cli.config(cli.url(server)))

    async def main() -> Any:
        async with cli.controller(
            turn_timeout=timeout,
            permission_handler=handler,
            permission_timeout=permission_timeout,
        ) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=config(server),
                posture=posture,
            )
            result = await controller.run_turn(ref, f"create {APPROVED}")
            assert controller.live(ref.session_id).context.turn_processes == []
            return result

    with serve(approval_script(tool_call)) as server:
        started = time.monotonic()
        result = anyio.run(main)
    return result, time.monotonic() - started


def permission_events(result: Any) -> tuple[list[Any], list[Any]]:
    requested = [e.payload for e in result.events if e.type == "permission.requested"]
    resolved = [e.payload for e in result.events if e.type == "permission.resolved"]
    return requested, resolved


def assert_one_terminal(result: Any) -> None:
    terminals = [e for e in result.events if e.terminal]
    assert len(terminals) == 1 and terminals[0] is result.events[-1], result.events


class ApprovalScenarios:
    """The approval tests of an adapter whose CLI asks the host."""

    #: the scripted call that creates ``approved.txt`` in the workspace
    touch: ClassVar[Any]
    #: a scripted call running ``rm -rf {victim}`` (``{victim}`` is filled in)
    remove: ClassVar[Any] = None
    #: the tool name the CLI reports for the shell
    shell_tool: ClassVar[str] = "Bash"
    #: how the permission request's summary starts for :attr:`touch`
    summary_contains: ClassVar[str] = "touch approved.txt"
    #: the CLI's own approval timeout, if it gives up before ours
    permission_timeout: ClassVar[float] = 3.0

    @pytest.mark.cli
    def test_host_allows_and_the_file_is_written(self, cli: CliUnderTest) -> None:
        asked: list[Any] = []

        async def allow(request: Any) -> Any:
            from harness_hookspecs import PermissionDecision

            asked.append(request)
            return PermissionDecision.allow()

        result, _ = approval_turn(cli, self.touch, allow)
        assert result.status == "completed", result
        assert (Path(cli.workspace) / APPROVED).exists()
        assert asked and self.summary_contains in asked[0].summary, asked
        requested, resolved = permission_events(result)
        assert requested and self.summary_contains in requested[0].summary
        assert (resolved[0].decision, resolved[0].source) == ("allow", "host")
        assert_one_terminal(result)
        started = [e.payload for e in result.events if e.type == "tool.started"]
        assert any(self.summary_contains in (p.summary or "") for p in started), started

    @pytest.mark.cli
    def test_host_denies_and_nothing_is_written(self, cli: CliUnderTest) -> None:
        async def deny(request: Any) -> Any:
            from harness_hookspecs import PermissionDecision

            return PermissionDecision.deny("not in this test")

        result, _ = approval_turn(cli, self.touch, deny)
        assert not (Path(cli.workspace) / APPROVED).exists()
        _, resolved = permission_events(result)
        assert resolved and (resolved[0].decision, resolved[0].source) == ("deny", "host")
        assert_one_terminal(result)

    @pytest.mark.cli
    def test_no_answer_is_a_deny_by_timeout(self, cli: CliUnderTest) -> None:
        async def never(request: Any) -> Any:
            await anyio.sleep(3600)

        result, seconds = approval_turn(
            cli, self.touch, never, permission_timeout=self.permission_timeout
        )
        assert not (Path(cli.workspace) / APPROVED).exists()
        _, resolved = permission_events(result)
        assert resolved and (resolved[0].decision, resolved[0].source) == ("deny", "timeout")
        assert seconds < self.permission_timeout + 45, seconds
        assert_one_terminal(result)

    @pytest.mark.cli
    def test_auto_posture_blocks_rm_rf_outside_the_workspace(
        self, cli: CliUnderTest, tmp_path: Path
    ) -> None:
        if self.remove is None:
            pytest.skip("no scripted rm -rf call for this CLI")
        victim = tmp_path / "victim"
        victim.mkdir()
        (victim / "keep.txt").write_text("keep")
        asked: list[Any] = []

        async def allow(request: Any) -> Any:
            from harness_hookspecs import PermissionDecision

            asked.append(request)
            return PermissionDecision.allow()

        call = self.remove(str(victim))
        result, _ = approval_turn(cli, call, allow, posture="auto")
        assert (victim / "keep.txt").exists()
        assert asked == []  # the command policy answered; nobody was asked
        _, resolved = permission_events(result)
        assert resolved and (resolved[0].decision, resolved[0].source) == ("deny", "policy")
        assert resolved[0].reason == "recursive or forced delete outside the workspace"
        assert_one_terminal(result)
