"""``harness serve --temporal``: the same HTTP API, turns on a Temporal worker. A session is
opened, a turn streamed (server-sent events from the shared ledger), another started and
cancelled, the session closed as a workflow; a steer of a harness without ``steer`` (stdio-jsonl)
is ``unsupported-feature`` in one line (test_serve_branching steers one that has it)."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.shapes import TASK_QUEUE
from temporal_workers import HARNESS, WorkerProcess

TOKEN = "serve-temporal-token"


class Api:
    def __init__(self, url: str) -> None:
        match = re.match(r"http://([^:/]+):(\d+)/", url)
        assert match, url
        self.host, self.port = match[1], int(match[2])

    def _send(self, method: str, path: str, body: Any, timeout: float) -> Any:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        connection.request(method, path, body=data, headers=headers)
        return connection, connection.getresponse()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        connection, response = self._send(method, path, body, 60)
        try:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
        finally:
            connection.close()

    def stream(self, path: str, body: Any) -> Iterator[tuple[str, Any]]:
        connection, response = self._send("POST", path, body, 120)
        try:
            assert response.status == 200, response.read()
            name, data = None, []
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and name is not None:
                    yield name, json.loads("\n".join(data)) if data else None
                    if name == "end":
                        return
                    name, data = None, []
        finally:
            connection.close()


def test_serve_runs_turns_on_temporal_workers(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace, steps_config
) -> None:
    worker = WorkerProcess("serve", temporal_address, TASK_QUEUE, postgresql_ledger_url, tmp_path)
    serve = None
    try:
        worker.wait_ready()
        serve = subprocess.Popen(
            [HARNESS, "serve", "--temporal", temporal_address, "--ledger", postgresql_ledger_url,
             "--port", "0", "--token-env", "SERVE_TOKEN", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "SERVE_TOKEN": TOKEN},
        )  # fmt: skip
        assert serve.stdout is not None
        first = serve.stdout.readline()
        assert "listening on" in first, first + serve.stderr.read()  # type: ignore[union-attr]
        api = Api(first.split("listening on ", 1)[1].strip())

        status, opened = api.call("POST", "/api/sessions", {
            "harness": "stdio-jsonl", "workspace": workspace, "config": steps_config})  # fmt: skip
        assert status == 201 or status == 200, opened
        session_id = opened["ref"]["session_id"]
        frames = list(api.stream(f"/api/sessions/{session_id}/turns", {"prompt": "hello"}))
        types = [data["type"] for name, data in frames if name != "end"]
        assert types[0] == "turn.started" and types[-1] == "turn.completed", frames
        assert frames[-1][0] == "end"

        # a turn started without streaming, seen running, then cancelled from the API
        status, started = api.call("POST", f"/api/sessions/{session_id}/turns",
                                   {"prompt": "steps 40 0.25", "stream": False})  # fmt: skip
        assert status == 202, started
        status, shown = api.call("GET", f"/api/sessions/{session_id}")
        assert shown["running_turn"] == started["turn_id"], shown
        status, refused = api.call("POST", f"/api/sessions/{session_id}/steer", {"text": "x"})
        assert status >= 400 and refused["error"]["reason"] == "unsupported-feature", refused
        status, _ = api.call("POST", f"/api/sessions/{session_id}/cancel", {})
        assert status in (200, 202), _
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, shown = api.call("GET", f"/api/sessions/{session_id}")
            if shown["running_turn"] is None:
                break
            time.sleep(0.2)
        status, events = api.call("GET", f"/api/sessions/{session_id}/events")
        ends = [e for e in events["events"] if e["turn_id"] == started["turn_id"]
                and e["type"] in ("turn.completed", "turn.failed", "turn.cancelled")]  # fmt: skip
        assert [(e["type"], e["payload"]["by"]) for e in ends] == [("turn.cancelled", "host")]
        status, _ = api.call("POST", f"/api/sessions/{session_id}/close")
        assert status in (200, 202, 204)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, shown = api.call("GET", f"/api/sessions/{session_id}")
            if shown["status"] == "closed":
                break
            time.sleep(0.2)
        assert shown["status"] == "closed", shown
        status, events = api.call("GET", f"/api/sessions/{session_id}/events")
        sequences = [e["sequence"] for e in events["events"]]
        assert sequences == list(range(1, len(sequences) + 1))
        assert events["events"][-1]["type"] == "session.closed"
        assert session_id in worker.log.read_text()  # the worker ran its turns
    finally:
        if serve is not None:
            serve.terminate()
            _, errors = serve.communicate(timeout=30)
            print("serve stderr:", errors[-3000:])
        worker.stop()
        print("worker log:", worker.log.read_text()[-3000:])
