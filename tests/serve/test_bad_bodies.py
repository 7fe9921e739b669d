"""Every bad body `harness serve` can be sent (issue 26, item 1): a 400 (or 413) JSON error with
a contract reason, nothing written, the server alive; numbers checked by the same validator as
the CLI's options (NaN, Infinity, 1e400 refused by both)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from harness_core.testing.serve import TEST_TOKEN

from .test_api import event_types, open_session


def raw_call(server, path, body: bytes, headers=None, token=TEST_TOKEN):
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        sent.update(headers or {})
        connection.request("POST", path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.getheader("content-type"), response.read()
    finally:
        connection.close()


def assert_refused(answer, status=400, reason="invalid-request"):
    code, content_type, raw = answer
    assert code == status, raw[:300]
    assert content_type == "application/json", raw[:300]
    error = json.loads(raw)["error"]
    assert error["reason"] == reason
    return error


# A value of the wrong type for every field of every body (and a few of the right type but
# out of range); each must be refused, never a 500.
WRONG = [1, 1.5, True, None, [1], {"a": 1}, "", "x" * 5000]
OPEN = {
    "harness": "scripted",
    "target": "local",
    "workspace": None,  # filled in
    "model": "m",
    "posture": "auto",
    "agent": "a",
    "user": "u",
    "config": {"k": "v"},
}
# the right type (and value) per field: a wrong one is any value of another type
RIGHT_TYPE = {
    "harness": str,
    "target": str,
    "workspace": str,
    "model": str,
    "posture": str,
    "agent": str,
    "user": str,
    "config": dict,
}


def _wrong_values(kind):
    return [v for v in WRONG if type(v) is not kind]


def test_wrong_types_in_every_field_of_every_body(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        before = event_types(server, session_id)
        for name, kind in RIGHT_TYPE.items():
            for value in _wrong_values(kind):
                if name in ("model", "agent", "user") and value is None:
                    continue  # optional: None is "not given"
                if name in ("target", "posture", "config", "workspace") and value is None:
                    continue  # None is the default
                body = {**OPEN, "workspace": workspace_dir, name: value}
                answer = raw_call(server, "/api/sessions", json.dumps(body).encode())
                assert_refused(answer)
        turn_fields = {
            "prompt": [v for v in WRONG if v != "x" * 5000],
            "timeout": ["1", [1], {"a": 1}, True, 0, -1, ""],
            "stream": [1, "yes", [1], {"a": 1}],
        }
        for name, values in turn_fields.items():
            for value in values:
                body = {"prompt": "hi", name: value}
                path = f"/api/sessions/{session_id}/turns"
                assert_refused(raw_call(server, path, json.dumps(body).encode()))
        for value in [1, 1.5, True, [1], {"a": 1}]:
            path = f"/api/sessions/{session_id}/cancel"
            answer = raw_call(server, path, json.dumps({"turn_id": value}).encode())
            assert_refused(answer)
        approve = {"request_id": "p", "decision": "allow", "reason": "r"}
        for name in approve:
            for value in [1, 1.5, True, [1], {"a": 1}]:
                body = {**approve, name: value}
                path = f"/api/sessions/{session_id}/approve"
                assert_refused(raw_call(server, path, json.dumps(body).encode()))
        # bodies that are not one JSON object
        for raw in [b"[]", b"1", b'"x"', b"{", b"\xff\xfe", b'{"prompt": "hi"} trailing']:
            assert_refused(raw_call(server, f"/api/sessions/{session_id}/turns", raw))
            assert_refused(raw_call(server, "/api/sessions", raw))
        # nothing written: still one session, no turn
        assert event_types(server, session_id) == before
        status, listing = server.call("GET", "/api/sessions", token=False)
        assert status == 200 and len(listing["sessions"]) == 1


@pytest.mark.parametrize("raw", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_timeouts_are_refused_as_by_the_cli(serve, workspace_dir, raw, cli_env):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        body = f'{{"prompt": "hi", "timeout": {raw}}}'.encode()
        error = assert_refused(raw_call(server, f"/api/sessions/{session_id}/turns", body))
        assert "timeout" in (error["hint"] or "") or "JSON" in (error["hint"] or "")
        assert event_types(server, session_id) == ["session.opened"]
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
    from cli_run import harness

    refused = harness(cli_env, "run", "echo", "hi", f"--timeout={raw.lower()}")
    assert refused.returncode == 2
    assert "argument --timeout: must be" in refused.stderr


def test_a_deeply_nested_body_is_a_400(serve, workspace_dir):
    with serve() as server:
        session_id = open_session(server, workspace_dir)
        deep = b'{"prompt": "hi", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        assert_refused(raw_call(server, f"/api/sessions/{session_id}/turns", deep))
        nested_config = {"harness": "scripted", "workspace": workspace_dir, "config": {}}
        inner = nested_config["config"]
        for _ in range(200):
            inner["k"] = {}
            inner = inner["k"]
        answer = raw_call(server, "/api/sessions", json.dumps(nested_config).encode())
        assert_refused(answer)
        assert event_types(server, session_id) == ["session.opened"]
        # the server lives on
        status, _ = server.call("GET", f"/api/sessions/{session_id}", token=False)
        assert status == 200


def test_a_workspace_that_is_no_directory_is_named(serve, workspace_dir, tmp_path):
    # both were "the workspace directory does not exist", naming nothing
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with serve() as server:
        for path, what in [(a_file, "is not a directory"), (tmp_path / "gone", "does not exist")]:
            body = {"harness": "scripted", "workspace": str(path)}
            error = assert_refused(raw_call(server, "/api/sessions", json.dumps(body).encode()))
            assert error["hint"] == f"the workspace {path} {what}"
