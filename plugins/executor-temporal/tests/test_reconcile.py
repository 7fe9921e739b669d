"""``harness reconcile-temporal`` (issue 33): an open session whose workflow is gone - never
found (what a dev server's restart leaves: it kept its workflows in memory) or terminated by
hand - is closed in the ledger, its open turn ended ``interrupted``; a session whose workflow
runs is left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.client import TemporalController
from temporal_workers import WorkerProcess
from temporalio.client import Client

from harness_core import Controller

HARNESS = str(Path(sys.executable).with_name("harness"))


def test_reconcile_closes_the_sessions_whose_workflow_is_gone(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config
):
    queue = "q-reconcile"
    worker = WorkerProcess("a", temporal_address, queue, postgresql_ledger_url, tmp_path)
    try:
        worker.wait_ready()
        kept, terminated, never = anyio.run(
            sessions, temporal_address, postgresql_ledger_url, queue, workspace, steps_config
        )
    finally:
        worker.stop()
    argv = [HARNESS, "reconcile-temporal", "--temporal", temporal_address,
            "--ledger", postgresql_ledger_url, "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = {f["session_id"]: f for f in map(json.loads, done.stdout.splitlines())}
    assert set(found) == {terminated, never}, found
    assert all(f["closed"] and f["reason"] == "workflow-gone" for f in found.values())
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert again.stdout == "" and "0 orphans ended" in again.stderr
    from ledger_postgresql.store import PostgresStore

    store = PostgresStore(postgresql_ledger_url)
    try:
        for session_id in (terminated, never):
            assert store.get_session(session_id).status == "closed"
            assert store.events(session_id)[-1].type == "session.closed"
        assert store.get_session(kept).status != "closed"
    finally:
        store.close()


async def sessions(address, ledger_url, queue, workspace, steps_config):
    client = await Client.connect(address)
    async with TemporalController(client, ledger=ledger_url, task_queue=queue) as controller:
        kept = await controller.open_session(
            harness="stdio-jsonl", workspace=workspace, config=steps_config
        )
        terminated = await controller.open_session(
            harness="stdio-jsonl", workspace=workspace, config=steps_config
        )
        assert (await controller.run_turn(terminated, "hello")).status == "completed"
    await client.get_workflow_handle(terminated.session_id).terminate(reason="operator")
    # a session in the ledger whose workflow never existed (as after a dev server's restart)
    async with Controller(ledger=ledger_url) as local:
        never = await local.open_session(harness="echo", workspace=workspace)
    return kept.session_id, terminated.session_id, never.session_id
