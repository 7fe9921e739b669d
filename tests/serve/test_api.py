"""The HTTP API of `harness serve` against a real uvicorn server and a real SQLite ledger."""

from __future__ import annotations

import threading
import time

import pytest

from .conftest import XSS


def open_session(server, workspace):
    status, body = server.call(
        "POST", "/api/sessions", {"harness": "scripted", "workspace": workspace}
    )
    assert status == 201, body
    return body["ref"]["session_id"]


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def event_types(server, session_id):
    status, body = server.call("GET", f"/api/sessions/{session_id}/events")
    assert status == 200
    return [event["type"] for event in body["events"]]


def test_every_state_change_needs_the_token(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        wrong = server.token[:-1] + ("x" if server.token[-1] != "x" else "y")
        changes = [
            ("/api/sessions", {"harness": "scripted", "workspace": workspace_dir}),
            (f"/api/sessions/{session_id}/turns", {"prompt": "hi"}),
            (f"/api/sessions/{session_id}/cancel", {}),
            (f"/api/sessions/{session_id}/approve", {"request_id": "p", "decision": "allow"}),
            (f"/api/sessions/{session_id}/close", {}),
        ]
        for path, body in changes:
            for token in (None, wrong, server.token + "x", ""):
                status, answer = server.call("POST", path, body, token=token)
                assert status == 401, (path, token, answer)
                assert answer["error"]["reason"] == "authentication-required"
                # the hint says which: no token sent, or one that is not this server's
                which = "invalid" if token else "missing"
                assert answer["error"]["hint"].startswith(f"the bearer token is {which}")
            status, _ = server.call(
                "POST", path, body, token=False, headers={"Authorization": f"Basic {server.token}"}
            )
            assert status == 401
        # nothing changed: one session, still open, no turn
        status, listing = server.call("GET", "/api/sessions", token=False)
        assert status == 200
        assert [s["ref"]["session_id"] for s in listing["sessions"]] == [session_id]
        assert listing["sessions"][0]["status"] == "open"
        assert event_types(server, session_id) == ["session.opened"]
        # reads need no token
        assert server.call("GET", "/api/harnesses", token=False) == (
            200,
            {"harnesses": ["scripted"]},
        )
        assert server.call("GET", f"/api/sessions/{session_id}", token=False)[0] == 200


def test_a_foreign_host_header_is_refused(serve):
    with serve() as server:
        status, _ = server.call("GET", "/api/sessions", headers={"Host": "attacker.example"})
        assert status == 400
        assert server.call("GET", "/api/sessions", headers={"Host": "localhost:1"})[0] == 200


def test_open_run_streamed_turn_events_export_close(serve, workspace_dir):
    with serve() as server:
        status, described = server.call("GET", "/api/harnesses/scripted")
        assert status == 200 and described["provider"] == "scripted"
        session_id = open_session(server, workspace_dir)
        frames = list(
            server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "tool"})
        )
        names = [name for name, _ in frames]
        assert names[0] == "turn.started" and names[-1] == "end"
        assert names[-2] == "turn.completed"
        assert "tool.started" in names and "usage" in names
        sequences = [data["sequence"] for name, data in frames[:-1]]
        assert sequences == list(range(2, 2 + len(sequences)))  # gap-free, after session.opened
        assert frames[-1][1] == {"reason": "turn-finished", "status": "turn.completed"}

        status, view = server.call("GET", f"/api/sessions/{session_id}")
        assert view["turns"] == 1 and view["input_tokens"] == 120 and view["output_tokens"] == 30
        assert view["cost_usd"] == pytest.approx(0.0021) and view["last_turn"] == "completed"

        status, page = server.call("GET", f"/api/sessions/{session_id}/events?after=3&limit=2")
        assert [e["sequence"] for e in page["events"]] == [4, 5]

        status, bundle = server.call("GET", f"/api/sessions/{session_id}/export")
        assert status == 200 and bundle["format"] == "harness-core.export"
        assert bundle["turns"][0]["text"] == "Looking at the repo. The README is fine."

        assert server.call("POST", f"/api/sessions/{session_id}/close") == (200, {"closed": True})
        assert server.call("POST", f"/api/sessions/{session_id}/close") == (200, {"closed": True})
        status, error = server.call("POST", f"/api/sessions/{session_id}/turns", {"prompt": "x"})
        assert status == 409 and error["error"]["reason"] == "session-closed"
        assert event_types(server, session_id)[-1] == "session.closed"


def test_cancel_a_running_turn(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        status, started = server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 100", "stream": False}
        )
        assert status == 202
        turn_id = started["turn_id"]
        wait_for(lambda: "message.delta" in event_types(server, session_id))
        status, busy = server.call("POST", f"/api/sessions/{session_id}/turns", {"prompt": "x"})
        assert status == 409 and busy["error"]["reason"] == "turn-active"
        assert server.call("GET", f"/api/sessions/{session_id}")[1]["running_turn"] == turn_id
        status, _ = server.call("POST", f"/api/sessions/{session_id}/cancel", {"turn_id": turn_id})
        assert status == 202
        wait_for(lambda: event_types(server, session_id)[-1] == "turn.cancelled", timeout=5)
        assert server.call("GET", f"/api/sessions/{session_id}")[1]["running_turn"] is None
        status, error = server.call("POST", f"/api/sessions/{session_id}/cancel", {})
        assert status == 404 and error["error"]["reason"] == "turn-not-found"


def test_live_follow_streams_new_events_until_close(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        seen = []

        def follow():
            for name, data in server.stream("GET", f"/api/sessions/{session_id}/events?follow=1"):
                seen.append((name, data))

        reader = threading.Thread(target=follow)
        reader.start()
        wait_for(lambda: seen)  # session.opened arrived: the follower is attached
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 3", "stream": False}
        )
        wait_for(lambda: any(name == "turn.completed" for name, _ in seen))
        server.call("POST", f"/api/sessions/{session_id}/close")
        reader.join(10)
        assert not reader.is_alive()
        names = [name for name, _ in seen]
        assert names[0] == "session.opened"
        assert names.count("message.delta") == 3
        assert names[-2:] == ["session.closed", "end"]
        assert [d["sequence"] for n, d in seen[:-1]] == list(range(1, len(seen)))


def test_follow_resumes_after_last_event_id(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "tool"}))
        _, body = server.call(
            "GET", f"/api/sessions/{session_id}/events", headers={"Last-Event-ID": "5"}
        )
        assert body["events"][0]["sequence"] == 6


def test_bad_requests_get_a_fixed_reason(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        cases = [
            ("POST", "/api/sessions", {"harness": "nope"}, 400, "invalid-request"),
            ("POST", "/api/sessions", {"workspace": workspace_dir}, 400, "invalid-request"),
            ("POST", "/api/sessions", {"harness": "scripted", "bogus": 1}, 400, "invalid-request"),
            (
                "POST",
                "/api/sessions",
                {"harness": "scripted", "workspace": "/does/not/exist"},
                400,
                "invalid-request",
            ),
            (
                "POST",
                "/api/sessions",
                {"harness": "scripted", "posture": "yolo"},
                400,
                "invalid-request",
            ),
            ("POST", f"/api/sessions/{session_id}/turns", {"prompt": ""}, 400, "invalid-request"),
            (
                "POST",
                f"/api/sessions/{session_id}/turns",
                {"prompt": "x", "timeout": -1},
                400,
                "invalid-request",
            ),
            ("POST", "/api/sessions/nosuch/turns", {"prompt": "x"}, 404, "session-not-found"),
            (
                "POST",
                f"/api/sessions/{session_id}/approve",
                {"request_id": "p", "decision": "maybe"},
                400,
                "invalid-request",
            ),
            (
                "POST",
                f"/api/sessions/{session_id}/approve",
                {"request_id": "p", "decision": "allow"},
                400,
                "invalid-request",
            ),
            ("GET", "/api/sessions/nosuch", None, 404, "session-not-found"),
            ("GET", "/api/sessions/nosuch/events", None, 404, "session-not-found"),
            ("GET", "/api/sessions/nosuch/export", None, 404, "session-not-found"),
            ("GET", "/api/sessions?limit=-5", None, 400, "invalid-request"),
            ("GET", f"/api/sessions/{session_id}/events?after=x", None, 400, "invalid-request"),
            ("GET", "/api/harnesses/nope", None, 400, "invalid-request"),
        ]
        for method, path, body, expected, reason in cases:
            status, answer = server.call(method, path, body)
            assert (status, answer["error"]["reason"]) == (expected, reason), (path, body, answer)
            assert "Traceback" not in str(answer)
        status, answer = server.call(
            "POST", "/api/sessions", None, headers={"Content-Type": "application/json"}
        )
        assert status == 400 and answer["error"]["reason"] == "invalid-request"
        assert event_types(server, session_id) == ["session.opened"]


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_approve_answers_the_waiting_request_and_the_turn_finishes(serve, workspace_dir, decision):
    with serve() as server:
        _, opened = server.call(
            "POST",
            "/api/sessions",
            {"harness": "scripted", "workspace": workspace_dir, "posture": "strict"},
        )
        session_id = opened["ref"]["session_id"]
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "permission", "stream": False}
        )
        wait_for(lambda: "permission.requested" in event_types(server, session_id))
        status, answer = server.call(
            "POST",
            f"/api/sessions/{session_id}/approve",
            {"request_id": "perm_1", "decision": decision, "reason": "not now"},
        )
        assert status == 200 and answer == {"answered": True, "decision": decision}
        wait_for(lambda: "turn.completed" in event_types(server, session_id))
        _, got = server.call("GET", f"/api/sessions/{session_id}/events")
        resolved = next(e for e in got["events"] if e["type"] == "permission.resolved")
        assert (resolved["payload"]["decision"], resolved["payload"]["source"]) == (
            decision,
            "host",
        )
        text = "allowed" if decision == "allow" else "denied: not now"
        assert any(e["payload"].get("text") == text for e in got["events"])
        # answered once: a second answer finds nothing pending
        status, again = server.call(
            "POST",
            f"/api/sessions/{session_id}/approve",
            {"request_id": "perm_1", "decision": decision},
        )
        assert status == 400 and again["error"]["reason"] == "invalid-request"


def test_session_page_escapes_event_text(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "xss <i>p</i>"}))
        for path in (f"/sessions/{session_id}", "/"):
            status, html = server.call("GET", path)
            assert status == 200
            assert "<script>window" not in html and "<img" not in html and "<i>p</i>" not in html
            assert "<b>tool</b>" not in html
        status, html = server.call("GET", f"/sessions/{session_id}")
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
        assert "&lt;i&gt;p&lt;/i&gt;" in html
        assert XSS not in html


def test_a_turn_keeps_running_when_its_stream_client_leaves(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        frames = server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 6"})
        next(frames)
        frames.close()  # the client disconnects after turn.started
        wait_for(lambda: event_types(server, session_id)[-1] == "turn.completed", timeout=10)
        assert event_types(server, session_id).count("message.delta") == 6


def test_stopping_the_server_records_running_turns_as_cancelled(serve, workspace_dir, tmp_path):
    from harness_core.ledger import open_ledger

    with serve() as server:
        session_id = open_session(server, workspace_dir)
        server.call(
            "POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 100", "stream": False}
        )
        wait_for(lambda: "message.delta" in event_types(server, session_id))
    store = open_ledger(f"sqlite:///{tmp_path}/serve.sqlite")
    try:
        assert store.events(session_id)[-1].type == "turn.cancelled"
    finally:
        store.close()


def test_cancel_of_a_session_not_live_here_is_turn_not_found(serve, workspace_dir, tmp_path):
    import anyio

    from harness_core import Controller, plugins_from

    from .conftest import scripted

    async def open_elsewhere():
        async with Controller(
            plugins=plugins_from([scripted]),
            ledger=f"sqlite:///{tmp_path}/serve.sqlite",
            state_dir=tmp_path / "other-state",
        ) as controller:
            ref = await controller.open_session(harness="scripted", workspace=workspace_dir)
            return ref.session_id

    session_id = anyio.run(open_elsewhere)
    with serve() as server:
        status, error = server.call("POST", f"/api/sessions/{session_id}/cancel", {})
        assert status == 404 and error["error"]["reason"] == "turn-not-found"
        # a turn resumes the session opened by the other process
        frames = list(server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "hi"}))
        assert frames[-2][0] == "turn.completed"
        assert [e for e in event_types(server, session_id)][:3] == [
            "session.opened",
            "session.resumed",
            "turn.started",
        ]


def test_session_page_shows_a_failure_with_its_reason(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        frames = list(
            server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "fail"})
        )
        assert frames[-2][0] == "turn.failed"
        assert frames[-2][1]["payload"]["reason"] == "provider-unavailable"
        _, html = server.call("GET", f"/sessions/{session_id}")
        assert 'data-status="failed"' in html
        assert "failed: <code>provider-unavailable</code> the provider is unavailable" in html
        assert "(the model server did not answer)" in html
        _, listing = server.call("GET", "/api/sessions")
        assert listing["sessions"][0]["last_turn"] == "failed"
