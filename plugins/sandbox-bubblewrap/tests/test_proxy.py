"""The host-side allowlist proxy on its own (no bwrap): a client talks to its Unix socket."""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_bubblewrap import Endpoint
from sandbox_bubblewrap.proxy import AllowlistProxy


@pytest.fixture
def proxy(servers) -> Iterator[AllowlistProxy]:
    with tempfile.TemporaryDirectory(prefix="proxy-test-") as d:
        allowed = [Endpoint("127.0.0.1", servers["allowed"])]
        with AllowlistProxy(Path(d) / "p.sock", allowed) as px:
            yield px
        assert not (Path(d) / "p.sock").exists()


def _ask(px: AllowlistProxy, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(px.socket_path))
        s.sendall(request)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        return data


def test_connect_allowed_and_relayed(proxy, servers) -> None:
    a = servers["allowed"]
    out = _ask(proxy, f"CONNECT 127.0.0.1:{a} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.0 200")
    assert out.endswith(f"hello from {a}".encode())


def test_absolute_uri_rewritten_to_origin_form(proxy, servers) -> None:
    a = servers["allowed"]
    out = _ask(
        proxy,
        f"GET http://127.0.0.1:{a}/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:{a}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n".encode(),
    )
    assert out.startswith(b"HTTP/1.0 200") and out.endswith(f"hello from {a}".encode())


@pytest.mark.parametrize(
    ("request_line", "status", "reason"),
    [
        ("CONNECT 127.0.0.1:{d} HTTP/1.1", b"403", "not-allowlisted"),
        ("CONNECT localhost:{a} HTTP/1.1", b"403", "not-allowlisted"),
        ("GET http://127.0.0.1:{d}/ HTTP/1.1", b"403", "not-allowlisted"),
        ("GET https://127.0.0.1:{a}/ HTTP/1.1", b"400", "bad-request"),
        ("GET / HTTP/1.1", b"400", "bad-request"),
        ("CONNECT 127.0.0.1 HTTP/1.1", b"400", "bad-request"),
        ("CONNECT a/b:80 HTTP/1.1", b"400", "bad-request"),
        ("nonsense", b"400", "bad-request"),
    ],
)
def test_refusals(proxy, servers, request_line, status, reason) -> None:
    line = request_line.format(a=servers["allowed"], d=servers["denied"])
    out = _ask(proxy, line.encode() + b"\r\n\r\n")
    assert out.split(b" ")[1] == status
    assert proxy.decisions[-1].allowed is False
    assert proxy.decisions[-1].reason == reason


def test_upstream_down_is_502(servers) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # bound, not listening: connection refused
        with (
            tempfile.TemporaryDirectory(prefix="proxy-test-") as d,
            AllowlistProxy(Path(d) / "p.sock", [Endpoint("127.0.0.1", dead)]) as px,
        ):
            out = _ask(px, f"CONNECT 127.0.0.1:{dead} HTTP/1.1\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 502")
    assert px.decisions[-1].reason == "upstream-failed"
