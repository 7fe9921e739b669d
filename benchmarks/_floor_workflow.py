"""The bare workflow of ``temporal_floor.py``: Temporal's own cost of one update, no harness.

Its own module (no heavy imports) so the workflow sandbox can re-import it cheaply.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

#: The update handlers the floor measures, each one "turn" of the bare workflow.
VARIANTS = ("nothing", "local", "activity")


@activity.defn(name="noop")
async def noop(turn_id: str) -> str:
    return turn_id


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    def __init__(self) -> None:
        self._closed = False

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self._closed)

    @workflow.update(name="nothing")
    async def nothing(self, turn_id: str) -> str:
        """The pure update round trip: accepted and completed in one workflow task."""
        return turn_id

    @workflow.update(name="local")
    async def local(self, turn_id: str) -> str:
        """A local activity: run in the worker during the workflow task, no dispatch."""
        result: str = await workflow.execute_local_activity(
            noop, turn_id, start_to_close_timeout=timedelta(seconds=60)
        )
        return result

    @workflow.update(name="activity")
    async def activity(self, turn_id: str) -> str:
        """A regular activity with the turn activity's options (started eagerly on this
        worker): what ``SessionWorkflow.turn`` does, minus the harness."""
        handle = workflow.start_activity(
            noop,
            turn_id,
            start_to_close_timeout=timedelta(seconds=3600),
            heartbeat_timeout=timedelta(seconds=5),
            retry_policy=RetryPolicy(
                maximum_attempts=2, initial_interval=timedelta(milliseconds=200)
            ),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        result: str = await handle
        return result

    @workflow.signal(name="close")
    def close(self) -> None:
        self._closed = True
