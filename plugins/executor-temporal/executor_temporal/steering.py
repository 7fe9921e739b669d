"""The worker's side of steering across Temporal: a relay beside each running turn.

The host's ``steer`` update waits in the session's workflow; the relay long-polls the workflow's
``next_steer`` update for the turn it runs beside, hands each text to the worker-local
controller (``Controller.steer``: ``turn.steered`` recorded, the harness told) and carries the
outcome back with its next poll. It starts polling only after :data:`POLL_AFTER` seconds, so
the short turns most sessions run cost no round trip; a steer asked sooner waits in the
workflow until then. A turn whose harness has no ``steer`` announces it once (the workflow then
refuses its steers with ``unsupported-feature``) and stops.

When the turn ends the relay's poll is abandoned, but a steer it was delivering is finished and
its outcome sent (a last poll the workflow answers at once) before the activity returns: the
host's update never waits on a lost acknowledgement.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Optional, cast

import anyio
import anyio.lowlevel
from harness_hookspecs import HarnessError
from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCError

from harness_core.controller import Controller

from .shapes import NEXT_STEER, SteerDone, SteerPoll, SteerWork

#: Seconds into a turn before its relay first polls the workflow.
POLL_AFTER = 0.5
#: The poll's answer as the data converter reads it (``None``: stop polling).
STEER_OR_NONE = cast(type, Optional[SteerWork])  # noqa: UP045 (a runtime type hint)
#: What a poll whose RPC timed out (or was cancelled) returns: poll again.
AGAIN = SteerWork("", "")
#: Seconds the last acknowledgement may take before the turn's activity returns anyway.
LAST_ACK_TIMEOUT = 10.0


class SteerRelay:
    """Long-polls the steers of one running turn and delivers them (see the module doc)."""

    def __init__(
        self, client: Client, controller: Controller, session_id: str, turn_id: str
    ) -> None:
        self.client = client
        self.controller = controller
        self.session_id = session_id
        self.turn_id = turn_id
        self.steerable = "steer" in controller.live(session_id).descriptor.features
        self._done: SteerDone | None = None  # delivered (or refused), not yet reported

    async def run(self) -> None:
        """Poll and deliver until the turn ends (the caller cancels this while it polls)."""
        await anyio.sleep(POLL_AFTER)
        while True:
            work = await self._poll()
            if work is AGAIN:
                continue  # the RPC timed out (a cancel raises at the next checkpoint)
            if work is None or not self.steerable:
                return
            with anyio.CancelScope(shield=True):  # a steer taken is delivered and reported
                self._done = await self._deliver(work)

    async def finish(self) -> None:
        """Report the last delivered steer's outcome (the turn ended)."""
        if self._done is not None:
            with anyio.move_on_after(LAST_ACK_TIMEOUT):
                await self._poll(final=True)

    async def _deliver(self, work: SteerWork) -> SteerDone:
        try:
            await self.controller.steer(self.session_id, work.text)
        except HarnessError as error:
            return SteerDone(work.steer_id, error.reason, error.hint)
        return SteerDone(work.steer_id)

    async def _poll(self, *, final: bool = False) -> SteerWork | None:
        done, self._done = self._done, None
        poll = SteerPoll(self.turn_id, steerable=self.steerable, done=done, final=final)
        handle = self.client.get_workflow_handle(self.session_id)
        try:
            work: SteerWork | None = await handle.execute_update(
                NEXT_STEER,
                poll,
                result_type=STEER_OR_NONE,
            )
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            await anyio.lowlevel.checkpoint()
            return AGAIN
        except (WorkflowUpdateFailedError, RPCError):
            return None  # the workflow is gone or refuses: nobody steers this turn any more
        return work


@asynccontextmanager
async def relaying_steers(
    client: Client | None, controller: Controller, session_id: str, turn_id: str
) -> AsyncIterator[None]:
    """Run a :class:`SteerRelay` beside the body (the running turn); report its last outcome
    once the body is done."""
    if client is None:  # activities used without a worker (no workflow to ask)
        yield
        return
    relay = SteerRelay(client, controller, session_id, turn_id)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(relay.run)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await relay.finish()
