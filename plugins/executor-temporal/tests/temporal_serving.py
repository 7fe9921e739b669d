"""The dev server the tests share and the replay check run after them (imported by
``conftest.py`` and the tests that serve a server of their own; a module of its own: a plugin's
``conftest`` is not importable by that name once the whole suite collects many of them)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from executor_temporal.shapes import SessionStart
from executor_temporal.testing import DevServer, TemporalUnavailable
from executor_temporal.workflow import SessionWorkflow
from temporalio import workflow


@workflow.defn(name="SessionWorkflow")
class ChangedWorkflow(SessionWorkflow):
    """The negative control: open now starts a timer first (a new command in history)."""

    @workflow.init
    def __init__(self, start: SessionStart) -> None:
        super().__init__(start)

    @workflow.run
    async def run(self, start: SessionStart) -> int:
        return await super().run(start)

    @workflow.update(name="open")
    async def open(self):  # type: ignore[override]
        await workflow.sleep(0.001)
        return await super().open()


def serving(server: DevServer) -> Iterator[str]:
    """Start ``server`` and yield its address; after, every workflow history the tests recorded
    there replays without a nondeterminism error (and the changed workflow's does not)."""
    try:
        server.start()
    except TemporalUnavailable as error:
        pytest.skip(f"Temporal dev server unavailable: {error}")
    try:
        yield server.address
        replayed = anyio.run(replay_every_history, server.address)
        if replayed is not None:  # None: the tests that ran started no workflow
            failures, control = replayed
            assert not failures, failures
            assert control, "the replayer did not notice a changed workflow"
    finally:
        server.stop()


async def replay_every_history(address: str) -> tuple[dict[str, str], int] | None:
    from temporalio.client import Client
    from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

    client = await Client.connect(address)
    runs = client.list_workflows("WorkflowType = 'SessionWorkflow'")
    histories = [history async for history in runs.map_histories()]

    async def recorded():  # the replayer takes an async iterator
        for history in histories:
            yield history

    if not histories:
        return None
    results = await Replayer(workflows=[SessionWorkflow]).replay_workflows(
        recorded(), raise_on_replay_failure=False
    )
    changed = await Replayer(
        workflows=[ChangedWorkflow], workflow_runner=UnsandboxedWorkflowRunner()
    ).replay_workflows(recorded(), raise_on_replay_failure=False)
    print(f"replayed {len(histories)} workflow histories; the changed workflow failed "
          f"{len(changed.replay_failures)} of them")  # fmt: skip
    failures = {run: repr(error) for run, error in results.replay_failures.items()}
    return failures, len(changed.replay_failures)
