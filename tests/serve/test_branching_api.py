"""`harness serve`'s steer, fork, checkpoints and rewind endpoints (real uvicorn, SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_core import harness

from .test_api import event_types, wait_for

pytest.importorskip("starlette", reason="harness serve needs the serve extra (starlette)")


@harness("shaper", features=("resume", "cancel", "steer", "fork", "checkpoint"))
async def shaper(message, session):
    if message.content == "wait":
        steered = await session.wait_steering()
        return "steered: " + " | ".join(steered)
    if message.content.startswith("write "):
        _, name, text = message.content.split(" ", 2)
        Path(session.workspace, name).write_text(text)
    return ";".join(text for _, text in session.history)


@pytest.fixture
def server(tmp_path):
    from harness_core.testing.serve import ServeThread

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ServeThread(
        shaper, ledger=f"sqlite:///{tmp_path}/serve.sqlite", state_dir=tmp_path / "state"
    ) as running:
        running.workspace = str(workspace)
        yield running


def _open(server):
    status, body = server.call(
        "POST", "/api/sessions", {"harness": "shaper", "workspace": server.workspace}
    )
    assert status == 201, body
    return body["ref"]["session_id"]


def _turn(server, session_id, prompt):
    status, body = server.call(
        "POST", f"/api/sessions/{session_id}/turns", {"prompt": prompt, "stream": False}
    )
    assert status == 202, body
    wait_for(lambda: server.call("GET", f"/api/sessions/{session_id}")[1]["running_turn"] is None)
    return body["turn_id"]


def _events(server, session_id):
    return server.call("GET", f"/api/sessions/{session_id}/events")[1]["events"]


def test_steer_a_running_turn_over_http(server):
    session_id = _open(server)
    status, error = server.call("POST", f"/api/sessions/{session_id}/steer", {"text": "x"})
    assert status == 404 and error["error"]["reason"] == "turn-not-found"
    status, _ = server.call(
        "POST", f"/api/sessions/{session_id}/turns", {"prompt": "wait", "stream": False}
    )
    assert status == 202
    status, body = server.call("POST", f"/api/sessions/{session_id}/steer", {"text": "go left"})
    assert status == 202, body
    wait_for(lambda: event_types(server, session_id)[-1] == "turn.completed")
    events = _events(server, session_id)
    assert [e["payload"]["text"] for e in events if e["type"] == "turn.steered"] == ["go left"]
    assert events[-1]["payload"]["text"] == "steered: go left"


def test_fork_checkpoint_and_rewind_over_http(server):
    session_id = _open(server)
    status, body = server.call("POST", f"/api/sessions/{session_id}/checkpoints")
    assert status == 201, body
    checkpoint = body["checkpoint_id"]
    _turn(server, session_id, "write a.txt one")
    first_end = _events(server, session_id)[-1]["event_id"]
    _turn(server, session_id, "two")
    status, child = server.call("POST", f"/api/sessions/{session_id}/fork", {"at": first_end})
    assert status == 201, child
    child_id = child["ref"]["session_id"]
    _turn(server, child_id, "three")
    assert (
        _events(server, child_id)[-1]["payload"]["text"] == "write a.txt one;write a.txt one;three"
    )
    status, listed = server.call("GET", f"/api/sessions/{session_id}/checkpoints")
    assert [c["payload"]["checkpoint_id"] for c in listed["checkpoints"]] == [checkpoint]
    status, error = server.call(
        "POST", f"/api/sessions/{session_id}/rewind", {"checkpoint": "ckpt_0000000000"}
    )
    assert status == 400 and error["error"]["reason"] == "invalid-request"
    status, rewound = server.call(
        "POST", f"/api/sessions/{session_id}/rewind", {"checkpoint": checkpoint}
    )
    assert status == 200, rewound
    assert rewound["conversation"] and rewound["turns_kept"] == 0
    assert not Path(server.workspace, "a.txt").exists()
    status, error = server.call("POST", f"/api/sessions/{session_id}/fork", {"at": "ev_nope_9"})
    assert status == 400 and error["error"]["reason"] == "invalid-request"


def test_a_turns_diff_over_http_needs_the_token(tmp_path):
    from harness_core.testing.serve import ServeThread

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("one\ntwo\n")
    with ServeThread(
        shaper,
        ledger=f"sqlite:///{tmp_path}/serve.sqlite",
        state_dir=tmp_path / "state",
        checkpoints=True,
    ) as server:
        server.workspace = str(workspace)
        session_id = _open(server)
        first = _turn(server, session_id, "write a.txt alpha\nbeta\n")
        second = _turn(server, session_id, "write kept.txt one\nTWO\n")
        base = f"/api/sessions/{session_id}/turns"
        anonymous = server.call("GET", f"{base}/{first}/diff", token=None)
        one = server.call("GET", f"{base}/{first}/diff")
        two = server.call("GET", f"{base}/2/diff")  # a turn's number works too
        unknown = server.call("GET", f"{base}/turn_nope/diff")
    status, refused = anonymous
    assert status == 401 and refused["error"]["reason"] == "authentication-required"
    status, diff = one
    assert status == 200, diff
    assert diff["turn_id"] == first and diff["truncated"] is False
    assert diff["files"] == [{"path": "a.txt", "added": 2, "removed": 0}]
    assert "+++ b/a.txt" in diff["patch"] and "+alpha\n+beta\n" in diff["patch"]
    status, diff = two
    assert status == 200 and diff["turn_id"] == second
    assert diff["files"] == [{"path": "kept.txt", "added": 1, "removed": 1}]
    assert "-two\n+TWO\n" in diff["patch"] and "a.txt" not in diff["patch"]
    status, missing = unknown
    assert status == 404 and missing["error"]["reason"] == "turn-not-found"


def test_fork_names_the_childs_workspace_as_the_cli_can(server, tmp_path):
    session_id = _open(server)
    _turn(server, session_id, "write a.txt one")
    other = tmp_path / "other"
    other.mkdir()
    status, child = server.call(
        "POST", f"/api/sessions/{session_id}/fork", {"workspace": str(other)}
    )
    assert status == 201, child
    assert child["workspace"] == str(other)
    child_id = child["ref"]["session_id"]
    _turn(server, child_id, "write b.txt two")
    assert (other / "b.txt").read_text() == "two"
    assert not Path(server.workspace, "b.txt").exists()
    # without one the child keeps the parent's
    status, child = server.call("POST", f"/api/sessions/{session_id}/fork", {})
    assert status == 201 and child["workspace"] == server.workspace


def test_fork_workspace_is_checked_like_the_open_routes(server, tmp_path):
    session_id = _open(server)
    _turn(server, session_id, "one")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for path, what in [(a_file, "is not a directory"), (tmp_path / "gone", "does not exist")]:
        for route, body in [
            ("/api/sessions", {"harness": "shaper", "workspace": str(path)}),
            (f"/api/sessions/{session_id}/fork", {"workspace": str(path)}),
        ]:
            status, error = server.call("POST", route, body)
            assert status == 400, error
            assert error["error"]["reason"] == "invalid-request"
            assert error["error"]["hint"] == f"the workspace {path} {what}"
    for value in [1, True, [1], {"a": 1}, ""]:
        status, error = server.call(
            "POST", f"/api/sessions/{session_id}/fork", {"workspace": value}
        )
        assert status == 400 and error["error"]["hint"] == "workspace must be non-empty text"
    # a misspelt field is named, not dropped (the child would land in the parent's workspace)
    status, error = server.call(
        "POST", f"/api/sessions/{session_id}/fork", {"workspce": str(tmp_path)}
    )
    assert status == 400 and error["error"]["hint"] == "unknown field 'workspce'"
    # nothing was forked
    status, listing = server.call("GET", "/api/sessions")
    assert len(listing["sessions"]) == 1


def test_an_imported_session_forks_over_http_into_a_workspace_of_its_own(tmp_path):
    from harness_core.bundle_import import import_bundle, load_bundle_file
    from harness_core.ledger import open_ledger
    from harness_core.testing.serve import ServeThread

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ServeThread(
        shaper, ledger=f"sqlite:///{tmp_path}/a.sqlite", state_dir=tmp_path / "state"
    ) as first:
        first.workspace = str(workspace)
        session_id = _open(first)
        _turn(first, session_id, "one")
        status, bundle = first.call("GET", f"/api/sessions/{session_id}/export")
        assert status == 200
    bundle_path = tmp_path / "bundle.json"
    bundle_path.write_text(json.dumps(bundle))
    store = open_ledger(f"sqlite:///{tmp_path}/b.sqlite")
    try:
        import_bundle(store, load_bundle_file(str(bundle_path)))
    finally:
        store.close()
    with ServeThread(
        shaper, ledger=f"sqlite:///{tmp_path}/b.sqlite", state_dir=tmp_path / "state-b"
    ) as second:
        route = f"/api/sessions/{session_id}/fork"
        status, error = second.call("POST", route, {})
        assert status == 400
        assert error["error"]["hint"] == (
            f"session {session_id} was imported: its fork needs a workspace of its own"
        )
        status, child = second.call("POST", route, {"workspace": str(workspace)})
        assert status == 201, child
        _turn(second, child["ref"]["session_id"], "two")
        assert _events(second, child["ref"]["session_id"])[-1]["payload"]["text"] == "one;one;two"
