"""A session's turns stay on the worker holding it; when that worker dies, the next turn goes to
another worker, which resumes the session once and keeps it from then on."""

from __future__ import annotations

import re
import signal
import sys
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.client import TemporalController
from temporal_workers import WorkerProcess
from temporalio.client import Client

#: Turns per phase. Were turns dealt to either worker at random, 10 consecutive turns would
#: move between workers at most once by chance about 1 time in 100.
TURNS = 10


def test_a_sessions_turns_stay_on_one_worker_and_move_once_when_it_dies(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace
):
    queue = f"q-{uuid.uuid4().hex[:8]}"
    workers = {
        name: WorkerProcess(name, temporal_address, queue, postgresql_ledger_url, tmp_path)
        for name in ("a", "b")
    }
    try:
        for worker in workers.values():
            worker.wait_ready()

        async def run(session_id: str | None, turns: int) -> str:
            client = await Client.connect(temporal_address)
            async with TemporalController(
                client, ledger=postgresql_ledger_url, task_queue=queue
            ) as controller:
                if session_id is None:
                    ref = await controller.open_session(harness="echo", workspace=workspace)
                    session_id = ref.session_id
                for n in range(turns):
                    summary = await controller.run_turn(session_id, f"turn {n}")
                    assert summary.ok, summary
            return session_id

        session_id = anyio.run(run, None, TURNS)
        ran = {name: turns_of(worker, session_id) for name, worker in workers.items()}
        holder = max(ran, key=lambda name: len(ran[name]))
        other = "b" if holder == "a" else "a"
        # every turn on the worker that opened the session; none resumed it
        assert len(ran[holder]) >= TURNS - 1, ran
        assert resumes(workers[holder], session_id) + resumes(workers[other], session_id) <= 1

        resumed_before = resumes(workers[other], session_id)
        workers[holder].process.send_signal(signal.SIGKILL)
        workers[holder].process.wait()
        anyio.run(run, session_id, TURNS)
        after = turns_of(workers[other], session_id)
        assert len(after) - len(ran[other]) == TURNS, after
        # the survivor resumed the session for the first turn after the death, and kept it
        assert resumes(workers[other], session_id) - resumed_before == 1
    finally:
        for worker in workers.values():
            worker.stop()


def turns_of(worker: WorkerProcess, session_id: str) -> list[str]:
    """The turn ids this worker's log shows it finished for ``session_id``."""
    found = re.findall(rf"turn\.finished .*session_id={session_id} turn_id=(\S+)",
                       worker.log.read_text())  # fmt: skip
    return found


def resumes(worker: WorkerProcess, session_id: str) -> int:
    return len(re.findall(rf"session\.attached session_id={session_id} how=resumed",
                          worker.log.read_text()))  # fmt: skip
