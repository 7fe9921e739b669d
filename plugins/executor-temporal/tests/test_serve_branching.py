"""``harness serve --temporal``: steer, checkpoints, rewind and fork through the HTTP API, on a
worker (in-process here, so that it knows the one-function harness of test_branching) and a
real ``harness serve`` process on the dev server and the PostgreSQL ledger."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
from executor_temporal.activities import SessionActivities
from executor_temporal.shapes import TASK_QUEUE
from executor_temporal.worker import build_worker
from temporalio.client import Client

from harness_core import plugins_from

sys.path.insert(0, str(Path(__file__).resolve().parent))
from temporal_workers import HARNESS
from test_branching import plain, shaped
from test_serve import TOKEN, Api


def until_settled(api: Api, session_id: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, shown = api.call("GET", f"/api/sessions/{session_id}")
        if shown["running_turn"] is None:
            return shown
        time.sleep(0.1)
    raise AssertionError(f"the turn of {session_id} did not end")


def streamed_text(api: Api, session_id: str, prompt: str) -> tuple[str, list[dict]]:
    frames = list(api.stream(f"/api/sessions/{session_id}/turns", {"prompt": prompt}))
    events = [data for name, data in frames if name != "end"]
    assert events[-1]["type"] == "turn.completed", events
    until_settled(api, session_id)
    return events[-1]["payload"]["text"], events


def branch_over_http(api: Api, workspace: str) -> dict:
    """The whole scenario (blocking HTTP calls); returns what the test asserts on."""
    seen: dict = {}
    status, opened = api.call(
        "POST", "/api/sessions", {"harness": "temporal-shaped", "workspace": workspace}
    )
    assert status == 201, opened
    sid = opened["ref"]["session_id"]
    _, first = streamed_text(api, sid, "write a.txt one")
    streamed_text(api, sid, "write b.txt two")
    seen["no_turn"] = api.call("POST", f"/api/sessions/{sid}/steer", {"text": "x"})

    status, started = api.call(
        "POST", f"/api/sessions/{sid}/turns", {"prompt": "wait", "stream": False}
    )
    assert status == 202, started
    seen["steer"] = api.call("POST", f"/api/sessions/{sid}/steer", {"text": "go left"})
    until_settled(api, sid)
    _, listed = api.call("GET", f"/api/sessions/{sid}/events")
    seen["waited"] = [e for e in listed["events"] if e["turn_id"] == started["turn_id"]]

    _, checkpoints = api.call("GET", f"/api/sessions/{sid}/checkpoints")
    turn_two = [e for e in listed["events"] if e["type"] == "turn.started"][1]["turn_id"]
    (start_two,) = [
        e["payload"]["checkpoint_id"]
        for e in checkpoints["checkpoints"]
        if e["payload"]["reason"] == "turn-start" and e["payload"]["turn_id"] == turn_two
    ]
    seen["foreign"] = api.call("POST", f"/api/sessions/{sid}/rewind", {"checkpoint": "ckpt_ab12"})
    seen["rewind"] = api.call("POST", f"/api/sessions/{sid}/rewind", {"checkpoint": start_two})
    seen["files"] = sorted(p.name for p in Path(workspace).iterdir())
    seen["after_rewind"], _ = streamed_text(api, sid, "after")
    seen["made"] = api.call("POST", f"/api/sessions/{sid}/checkpoints", {})

    seen["fork"] = status, child = api.call(
        "POST", f"/api/sessions/{sid}/fork", {"at": first[-1]["event_id"]}
    )
    assert status == 201, child
    cid = child["ref"]["session_id"]
    seen["in_child"], _ = streamed_text(api, cid, "charlie")
    _, seen["child_events"] = api.call("GET", f"/api/sessions/{cid}/events")
    _, seen["parent_events"] = api.call("GET", f"/api/sessions/{sid}/events")
    for session_id in (cid, sid):
        api.call("POST", f"/api/sessions/{session_id}/close")
    seen["ids"] = [sid, cid]
    return seen


def test_serve_steers_rewinds_and_forks_on_temporal(
    temporal_address, postgresql_ledger_url, tmp_path: Path, workspace
) -> None:
    async def main() -> dict:
        client = await Client.connect(temporal_address)
        activities = SessionActivities(
            ledger=postgresql_ledger_url,
            state_dir=tmp_path / "state-w",
            plugins=plugins_from([shaped, plain], entry_points=True),
            checkpoints=True,
        )
        async with activities, build_worker(client, activities, task_queue=TASK_QUEUE):
            serve = subprocess.Popen(
                [HARNESS, "serve", "--temporal", temporal_address, "--ledger",
                 postgresql_ledger_url, "--port", "0", "--token-env", "SERVE_TOKEN", "--quiet"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, "SERVE_TOKEN": TOKEN},
            )  # fmt: skip
            try:
                assert serve.stdout is not None
                first = await anyio.to_thread.run_sync(serve.stdout.readline)
                assert "listening on" in first, first
                api = Api(first.split("listening on ", 1)[1].strip())
                return await anyio.to_thread.run_sync(branch_over_http, api, workspace)
            finally:
                serve.terminate()
                _, errors = serve.communicate(timeout=30)
                print("serve stderr:", errors[-3000:])

    seen = anyio.run(main)
    status, refused = seen["no_turn"]
    assert status == 404
    assert refused["error"]["reason"] == "turn-not-found", refused
    assert seen["steer"][0] == 202, seen["steer"]
    waited = seen["waited"]
    assert [e["payload"]["text"] for e in waited if e["type"] == "turn.steered"] == ["go left"]
    assert waited[-1]["type"] == "turn.completed"
    assert waited[-1]["payload"]["text"].startswith("steered: go left // ")

    status, foreign = seen["foreign"]
    assert status == 400 and foreign["error"]["reason"] == "invalid-request", foreign
    status, rewound = seen["rewind"]
    assert status == 200, rewound
    assert rewound["conversation"] is True and rewound["turns_kept"] == 1
    assert seen["files"] == ["a.txt"]  # b.txt (turn 2) gone, a.txt (turn 1) kept
    assert seen["after_rewind"] == "user=write a.txt one;assistant=user=write a.txt one;user=after"
    status, made = seen["made"]
    assert status == 201 and made["checkpoint_id"].startswith("ckpt_"), made

    assert "user=write a.txt one" in seen["in_child"] and "b.txt" not in seen["in_child"]
    assert seen["in_child"].endswith("user=charlie")
    sid, cid = seen["ids"]
    for side in (seen["parent_events"], seen["child_events"]):
        (forked,) = [e for e in side["events"] if e["type"] == "session.forked"]
        assert forked["payload"]["parent_session_id"] == sid
        assert forked["payload"]["child_session_id"] == cid
