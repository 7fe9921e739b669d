"""A client sending slowly holds no connection of `harness serve` for long: headers, or a body,
not received within ``read_timeout`` are answered 408 (the API's JSON error) and the connection
closed; a request while more than ``max_connections`` are open is a 503. Event streams - a
response being sent - are not timed."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

from harness_core.testing.serve import TEST_TOKEN

from .test_api import open_session


def _connect(server) -> socket.socket:
    parts = urlsplit(server.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    sock.settimeout(0.2)
    return sock


def _answer(sock: socket.socket, trickle: bytes = b"", within: float = 10.0):
    """Read until the server closes, sending ``trickle`` every 0.2 s meanwhile; return
    (status, JSON body, seconds it took)."""
    started, reply = time.monotonic(), b""
    while time.monotonic() - started < within:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            if trickle:
                try:
                    sock.sendall(trickle)
                except OSError:
                    pass
            continue
        if not data:
            break
        reply += data
    sock.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head, "no answer"
    assert b"connection: close" in head.lower(), head
    return int(head.split()[1]), json.loads(body), time.monotonic() - started


HEAD = "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n"


def test_slow_headers_and_slow_bodies_are_a_408_within_the_read_timeout(serve, workspace_dir):
    with serve(serve_options={"read_timeout": 1}) as server:
        cases = {
            "silent": (b"", b""),
            "slow headers": (b"GET /api/harnesses HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-a: b\r\n"),
            "slow body": (
                (HEAD.format(TEST_TOKEN) + "Content-Length: 100000\r\n\r\n{").encode(),
                b" ",
            ),
        }
        for name, (first, trickle) in cases.items():
            sock = _connect(server)
            sock.sendall(first)
            status, body, took = _answer(sock, trickle)
            assert status == 408, name
            assert body["error"]["reason"] == "invalid-request", name
            assert body["error"]["hint"] == "the request was not received within 1 seconds"
            assert took < 5, f"{name}: {took:.1f} s"
        # nothing was opened, and the server goes on
        status, listing = server.call("GET", "/api/sessions")
        assert status == 200 and listing["sessions"] == []
        open_session(server, workspace_dir)


def test_an_event_stream_outlives_the_read_timeout(serve, workspace_dir):
    with serve(serve_options={"read_timeout": 0.5}) as server:
        session_id = open_session(server, workspace_dir)
        started = time.monotonic()
        frames = list(
            server.stream("POST", f"/api/sessions/{session_id}/turns", {"prompt": "slow 10"})
        )
        assert time.monotonic() - started > 1.5
        deltas = [data["payload"]["text"] for name, data in frames if name == "message.delta"]
        assert deltas == [f"chunk{i} " for i in range(10)]
        assert frames[-1][0] == "end"


def test_a_request_past_max_connections_is_a_503(serve):
    with serve(serve_options={"max_connections": 3, "read_timeout": 10}) as server:
        held = [_connect(server) for _ in range(3)]
        try:
            time.sleep(0.2)
            status, body = server.call("GET", "/api/harnesses")
            assert status == 503
            assert body["error"]["reason"] == "provider-unavailable"
            assert body["error"]["hint"] == (
                "harness serve holds 3 connections already: retry later"
            )
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.2)
        status, body = server.call("GET", "/api/harnesses")
        assert status == 200 and "scripted" in body["harnesses"]
