"""A Temporal worker for harness sessions: the workflow plus the activities on one task queue.

The settings the issue measured: heartbeats reach Temporal at most 0.5 s apart (a cancel reaches
the activity within about that, instead of ~7.5 s with the default throttle), and a sticky queue
times out after 1 s (a session's next turn after a worker death is not held ~10 s for the dead
worker's cache).

**A session's turns stay on one worker** (its ``Controller`` stays attached; no resume, no
re-read of the session per turn): the workflow's tasks go to the worker that has it cached
(Temporal's sticky queue), and the turn activity the workflow schedules there starts on that
same worker, returned with the workflow task's answer (eager activity start: no queue, no
poll). When that worker is gone (the sticky queue times out) or full (no free activity slot),
the task goes to the shared queue and whichever worker takes it resumes the session; a retried
attempt always goes there. Eager start needs the service's dynamic config
``system.enableActivityEagerExecution: true`` (on in the dev server; some server releases
default it to false: deploy/ sets it). Without it every turn goes through the shared queue and
may land on any worker, which then resumes the session.

A turn that started inside the workflow task (``start_turn``, a local activity) and outlasts its
window is followed by a ``run_turn`` on a task queue of this worker's own, which only it polls
(:class:`SessionWorker`): eager start is best effort (off on a server without that dynamic
config, skipped without a free slot), and the follow-up must reach the worker running the turn,
or another worker would take the session over and run the turn again.

SIGTERM (SIGINT too) drains: the worker stops polling the shared queue, running turns get
``grace`` seconds to finish (the follow-ups of its own queue still reach it), then the rest are
handed over to other workers (see :mod:`.activities`); then it releases every session and
exits. ``max_concurrent``: turns (activities) it runs at once.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import anyio
from temporalio.client import Client
from temporalio.worker import Worker

from .activities import HEARTBEAT_SETTLE, SessionActivities
from .connection import TemporalConnection
from .observability import HealthServer, Monitor, note
from .shapes import DEFAULT_GRACE, DEFAULT_MAX_CONCURRENT, NAMESPACE, TASK_QUEUE
from .workflow import SessionWorkflow

HEARTBEAT_THROTTLE = timedelta(seconds=0.5)
STICKY_TIMEOUT = timedelta(seconds=1)
#: Seconds past the grace Temporal's own shutdown waits before cancelling what still runs:
#: the handover (a flush, a kill, the last heartbeat) happens first.
HANDOVER_ROOM = 10.0


def build_worker(
    client: Client,
    activities: SessionActivities,
    *,
    task_queue: str = TASK_QUEUE,
    max_concurrent_activities: int = DEFAULT_MAX_CONCURRENT,
) -> SessionWorker:
    """The Temporal workers of one harness worker (``async with`` the result): the workflow
    and the activities on ``task_queue``, and ``run_turn`` on a task queue of this worker's
    own (see :class:`SessionWorker`)."""
    activities.approver.client = client  # permission requests go to the workflows through it
    activities.max_concurrent = max_concurrent_activities
    activities.own_queue = f"{task_queue}.{client.identity}.{uuid.uuid4().hex[:8]}"
    shutdown = activities.grace + HEARTBEAT_SETTLE + HANDOVER_ROOM
    common: dict[str, Any] = {
        "max_concurrent_activities": max_concurrent_activities,
        "max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        "graceful_shutdown_timeout": timedelta(seconds=shutdown),
    }
    shared = Worker(
        client,
        task_queue=task_queue,
        workflows=[SessionWorkflow],
        activities=activities.activities(),
        max_concurrent_local_activities=max_concurrent_activities,
        sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
        disable_eager_activity_execution=False,  # session-sticky turns: see the module doc
        **common,
    )
    own = Worker(
        client, task_queue=activities.own_queue, activities=[activities.run_turn], **common
    )
    return SessionWorker(shared, own, activities, settle=shutdown)


class SessionWorker:
    """``shared`` polls the workflow's task queue (workflow tasks, every activity); ``own``
    polls ``activities.own_queue``, where the workflow sends the ``run_turn`` that follows a
    turn ``start_turn`` began on this worker: only this worker takes it, eager activity start
    or not. On exit ``shared`` stops first (no new turn comes); ``own`` is polled on until the
    turns running here were collected (they end within the grace or are handed over), at most
    ``settle`` seconds, so that their follow-ups still reach them."""

    def __init__(
        self, shared: Worker, own: Worker, activities: SessionActivities, *, settle: float
    ) -> None:
        self.shared = shared
        self.own = own
        self.activities = activities
        self.settle = settle

    async def __aenter__(self) -> SessionWorker:
        await self.own.__aenter__()
        try:
            await self.shared.__aenter__()
        except BaseException:
            await self.own.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self.shared.__aexit__(*exc_info)
        finally:
            await self.activities.collected(self.settle)
            await self.own.__aexit__(*exc_info)


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
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    grace: float = DEFAULT_GRACE,
    checkpoints: bool = False,
    http: tuple[str, int] | None = None,
    connection: TemporalConnection | None = None,
) -> None:
    """Serve until SIGINT / SIGTERM; then drain (see the module doc) and release every session.

    ``http``: (host, port) of ``/healthz``, ``/readyz`` and ``/metrics`` (see
    :mod:`.observability`); port 0 picks a free one (logged in ``worker.started``).
    ``connection``: TLS and an API key (:mod:`.connection`; it names the address and namespace
    itself). ``checkpoints``: snapshot workspaces around each turn (in ``state_dir``)."""
    if connection is None:
        connection = TemporalConnection(address, namespace)
    client = await connection.client()
    monitor = Monitor()
    server = HealthServer(monitor, *http).start() if http is not None else None
    where = None if server is None else f"{server.host}:{server.port}"
    activities = SessionActivities(
        ledger=ledger,
        state_dir=state_dir,
        shared_state=shared_state,
        env_passthrough=env_passthrough,
        grace=grace,
        monitor=monitor,
        checkpoints=checkpoints,
    )
    try:
        async with anyio.create_task_group() as beats:
            beats.start_soon(_beat, monitor)
            worker = build_worker(
                client, activities, task_queue=task_queue, max_concurrent_activities=max_concurrent
            )
            async with activities, worker:
                monitor.ready = True
                note("worker.started", pid=os.getpid(), task_queue=task_queue,
                     own_queue=activities.own_queue,
                     namespace=namespace, max_concurrent=max_concurrent, grace=grace,
                     http=where)  # fmt: skip
                if on_ready is not None:
                    on_ready()
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    signum = await anext(aiter(signals))
                monitor.ready = False
                monitor.draining.set(1)
                note("worker.draining", signal=signal.Signals(signum).name,
                     running=monitor.turns, grace=grace)  # fmt: skip
                activities.drain()
            beats.cancel_scope.cancel()
    finally:
        if server is not None:
            server.stop()
    note("worker.stopped", pid=os.getpid())


async def _beat(monitor: Monitor) -> None:
    """Liveness: the event loop answers (``/healthz`` goes 503 when it stops)."""
    while True:
        monitor.beat = time.monotonic()
        await anyio.sleep(1.0)
