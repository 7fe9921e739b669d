"""``harness worker`` + ``harness run --temporal``: a turn from the command line on a worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.shapes import TASK_QUEUE
from temporal_workers import HARNESS, WorkerProcess


def test_harness_run_temporal_runs_the_turn_on_a_worker(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config
):
    worker = WorkerProcess("cli", temporal_address, TASK_QUEUE, postgresql_ledger_url, tmp_path)
    try:
        worker.wait_ready()
        argv = [HARNESS, "run", "stdio-jsonl", "hello from the cli", "--temporal",
                temporal_address, "--ledger", postgresql_ledger_url, "--workspace", workspace,
                "--config", "command=" + json.dumps(steps_config["command"]), "--close"]  # fmt: skip
        done = subprocess.run(
            [*argv, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HARNESS_DEBUG": "1"},
        )
        readable = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr + worker.log.read_text()[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events] == [
        "session.opened", "turn.started", "message.delta", "usage", "turn.completed"
    ]  # fmt: skip
    assert [e["sequence"] for e in events] == [1, 2, 3, 4, 5]
    assert readable.returncode == 0, readable.stderr
    assert "hello from the cli" in readable.stdout and "completed" in readable.stderr
    refused = subprocess.run(
        [HARNESS, "run", "stdio-jsonl", "again", "--temporal", temporal_address, "--ledger",
         postgresql_ledger_url, "--session", events[0]["session_id"]],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode != 0 and "session-closed" in refused.stderr
