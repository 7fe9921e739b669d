"""A Temporal worker for harness sessions: the workflow plus the activities on one task queue.

The settings the issue measured: heartbeats reach Temporal at most 0.5 s apart (a cancel reaches
the activity within about that, instead of ~7.5 s with the default throttle), and a sticky queue
times out after 1 s (a session's next turn after a worker death is not held ~10 s for the dead
worker's cache).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from datetime import timedelta

import anyio
from harness_hookspecs import HarnessError
from temporalio.client import Client
from temporalio.worker import Worker

from .activities import SessionActivities
from .shapes import NAMESPACE, TASK_QUEUE
from .workflow import SessionWorkflow

HEARTBEAT_THROTTLE = timedelta(seconds=0.5)
STICKY_TIMEOUT = timedelta(seconds=1)


def build_worker(
    client: Client,
    activities: SessionActivities,
    *,
    task_queue: str = TASK_QUEUE,
    max_concurrent_activities: int = 100,
) -> Worker:
    activities.approver.client = client  # permission requests go to the workflows through it
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[SessionWorkflow],
        activities=activities.activities(),
        max_concurrent_activities=max_concurrent_activities,
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        graceful_shutdown_timeout=timedelta(seconds=5),
    )


async def run_worker(
    address: str,
    *,
    ledger: str,
    namespace: str = NAMESPACE,
    task_queue: str = TASK_QUEUE,
    state_dir: str | os.PathLike[str] | None = None,
    shared_state: str | os.PathLike[str] | None = None,
    env_passthrough: Sequence[str] = (),
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGINT / SIGTERM; then finish (cancel) what runs and release every session."""
    try:
        client = await Client.connect(address, namespace=namespace)
    except RuntimeError:  # the SDK's connection failure
        raise HarnessError("provider-unavailable", "cannot reach the Temporal service") from None
    activities = SessionActivities(
        ledger=ledger,
        state_dir=state_dir,
        shared_state=shared_state,
        env_passthrough=env_passthrough,
    )
    async with activities, build_worker(client, activities, task_queue=task_queue):
        if on_ready is not None:
            on_ready()
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                break
