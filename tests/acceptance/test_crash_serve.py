"""`harness serve` killed with SIGKILL mid-turn: every event a client was sent is in the ledger,
the turn's agent process goes with the server, and the next server closes the turn and goes on."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness_core.export import open_turn
from harness_core.ledger import open_ledger
from harness_core.serialize import event_to_dict

from .test_crash import STREAM, _check_integrity, _env, _leftovers

pytest.importorskip("starlette", reason="harness serve needs the serve extra (starlette)")
pytest.importorskip("uvicorn", reason="harness serve needs the serve extra (uvicorn)")

HARNESS = str(Path(sys.executable).with_name("harness"))
TOKEN = "crash-serve-token-0123456789abcdef"


class Server:
    def __init__(self, env: dict[str, str], cwd: Path, options: tuple[str, ...] = ()) -> None:
        self.process = subprocess.Popen(
            [HARNESS, "serve", "--port", "0", "--token-env", "SERVE_TOKEN", *options],
            cwd=cwd,
            env=dict(env, SERVE_TOKEN=TOKEN),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        assert first.startswith("harness serve: listening on http://127.0.0.1:"), first
        self.port = int(first.split()[-1].rstrip("/").rsplit(":", 1)[1])

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method: str, path: str, body: object) -> http.client.HTTPResponse:
        connection = self.connection()
        connection.request(
            method,
            path,
            body=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        return connection.getresponse()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _frames(response: http.client.HTTPResponse, count: int) -> list[dict]:
    """The first ``count`` server-sent events' data (event dicts) of a streamed turn."""
    seen: list[dict] = []
    data: list[str] = []
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            seen.append(json.loads("\n".join(data)))
            data = []
            if len(seen) >= count:
                break
    return seen


@pytest.mark.parametrize(
    ("after", "options"),
    [(3, ()), (400, ()), (400, ("--max-backlog", "8"))],  # the last: paced by the ledger
)
def test_kill_9_of_serve_mid_turn_loses_no_sent_event_and_leaves_no_process(
    after, options, tmp_path
):
    program = tmp_path / "stream.py"
    program.write_text(STREAM)
    ledger = f"sqlite:///{tmp_path}/serve.sqlite"
    env = _env(tmp_path, ledger)
    marker = f"serve-crash-{after}-{os.getpid()}"
    workspace = tmp_path / "ws"
    workspace.mkdir()

    server = Server(env, tmp_path, options)
    try:
        opened = server.request(
            "POST",
            "/api/sessions",
            {
                "harness": "stdio-jsonl",
                "workspace": str(workspace),
                "config": {"command": [sys.executable, str(program), marker]},
            },
        )
        assert opened.status == 201, opened.read()[:300]
        session_id = json.loads(opened.read())["ref"]["session_id"]
        streamed = server.request("POST", f"/api/sessions/{session_id}/turns", {"prompt": "go"})
        assert streamed.status == 200
        sent = _frames(streamed, after)
        assert len(sent) == after and sent[0]["type"] == "turn.started"
        assert _leftovers(marker), "the agent runs while the turn streams"
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
    finally:
        server.stop()

    # The agent dies with the server that started it (parent-death signal, then broken pipe).
    deadline = time.monotonic() + 5
    while _leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _leftovers(marker) == []

    _check_integrity(ledger, tmp_path)
    store = open_ledger(ledger)
    stored = {e.event_id: event_to_dict(e) for e in store.events(session_id)}
    assert open_turn(store, session_id) == "interrupted"
    store.close()
    missing = [e["event_id"] for e in sent if stored.get(e["event_id"]) != e]
    assert not missing, f"{len(missing)} of {len(sent)} sent events are not in the ledger"

    # A new server resumes the session with its first turn: the killed turn stays closed as
    # interrupted, and the new one runs.
    # The session's config is not stored (it may hold secrets); this server names the command
    # through the adapter's environment variable instead.
    command = json.dumps([sys.executable, str(program), marker + "-next"])
    again = Server(dict(env, HARNESS_JSONL_COMMAND=command), tmp_path)
    try:
        finished = again.request(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "finish", "stream": False}
        )
        assert finished.status in (200, 202), finished.read()[:300]
        finished.read()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            store = open_ledger(ledger)
            types = [e.type for e in store.events(session_id)]
            store.close()
            if types[-1] == "turn.completed":
                break
            time.sleep(0.1)
        assert types[-1] == "turn.completed"
        assert types.count("turn.failed") == 1  # the killed turn, closed as interrupted
    finally:
        again.stop()
