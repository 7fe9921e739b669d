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


def test_a_dev_server_restart_orphans_the_session_and_reconcile_closes_it(
    postgresql_ledger_url, tmp_path: Path, workspace, steps_config
):
    """The real thing: a dev server of this test's own is stopped and started again on the same
    port (it kept its workflows in memory). The worker rides it out, but the session's workflow
    is gone: a turn is refused ``session-not-found``, and ``harness reconcile-temporal`` closes
    the session in the ledger, after which a second pass finds nothing."""
    from executor_temporal.testing import DevServer

    first = DevServer().start()
    port = int(first.address.rpartition(":")[2])
    queue = "q-restart"
    worker = WorkerProcess("r", first.address, queue, postgresql_ledger_url, tmp_path)
    second = None
    try:
        worker.wait_ready()
        session_id = anyio.run(opened_with_a_turn, first.address, postgresql_ledger_url, queue,
                               workspace, steps_config)  # fmt: skip
        first.stop()
        second = DevServer(port=port).start()
        assert second.address == first.address
        refused = anyio.run(turn_refused, second.address, postgresql_ledger_url, queue, session_id)
        assert refused == "session-not-found"
        argv = [HARNESS, "reconcile-temporal", "--temporal", second.address,
                "--ledger", postgresql_ledger_url, "--json"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        found = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(f["session_id"], f["closed"], f["reason"]) for f in found] == [
            (session_id, True, "workflow-gone")
        ]
        again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert again.stdout == "" and "0 orphans ended" in again.stderr
    finally:
        worker.stop()
        first.stop()
        if second is not None:
            second.stop()
    from ledger_postgresql.store import PostgresStore

    store = PostgresStore(postgresql_ledger_url)
    try:
        events = store.events(session_id)
        assert store.get_session(session_id).status == "closed"
        assert [e.type for e in events].count("turn.completed") == 1
        assert events[-1].type == "session.closed"
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    finally:
        store.close()


async def opened_with_a_turn(address, ledger_url, queue, workspace, steps_config) -> str:
    client = await Client.connect(address)
    async with TemporalController(client, ledger=ledger_url, task_queue=queue) as controller:
        ref = await controller.open_session(
            harness="stdio-jsonl", workspace=workspace, config=steps_config
        )
        assert (await controller.run_turn(ref, "hello")).status == "completed"
    return ref.session_id


async def turn_refused(address, ledger_url, queue, session_id) -> str:
    from harness_hookspecs import HarnessError

    client = await Client.connect(address)
    async with TemporalController(client, ledger=ledger_url, task_queue=queue) as controller:
        try:
            await controller.run_turn(session_id, "after the restart")
        except HarnessError as error:
            return error.reason
    return "ran"
