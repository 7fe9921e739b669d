"""Each network policy, probed for real from inside bwrap.

Host side: three HTTP servers on 127.0.0.1 (``allowed``, ``denied``, ``model``), an abstract
Unix socket and (when /run is writable) a Unix socket in /run.
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from collections.abc import Iterator

import pytest
from sandbox_bubblewrap import NetworkPolicy


@pytest.fixture
def host_unix() -> Iterator[dict[str, str | None]]:
    """A listening abstract Unix socket and, if possible, one at /run/<name>.sock."""
    name = f"harness-bwrap-test-{uuid.uuid4().hex[:8]}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + name)
    abstract.listen(8)
    run_path: str | None = f"/run/{name}.sock"
    run_sock = socket.socket(socket.AF_UNIX)
    try:
        run_sock.bind(run_path)
        run_sock.listen(8)
    except OSError:
        run_path = None
    yield {"abstract": name, "run": run_path}
    abstract.close()
    run_sock.close()
    if run_path:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(run_path)


def test_none_reaches_nothing(sandbox, servers, host_unix) -> None:
    sb = sandbox(NetworkPolicy("none"))
    a = servers["allowed"]
    out = sb.json(
        f"""
print(json.dumps({{
    "host_loopback_tcp": tcp("127.0.0.1", {a}),
    "host_loopback_http": get("http://127.0.0.1:{a}/", proxy=False),
    "outside_ip": tcp("192.0.2.1", 80),
    "interfaces": sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]),
    "proxy_env": [k for k in os.environ if k.lower().endswith("_proxy")],
    "abstract_unix": unix({host_unix["abstract"]!r}, abstract=True),
    "run_unix": unix({host_unix["run"]!r}) if {host_unix["run"]!r} else "skipped",
}}))
"""
    )
    assert out["host_loopback_tcp"] == "ECONNREFUSED"  # the sandbox's own, empty loopback
    assert out["host_loopback_http"] == "ECONNREFUSED"
    assert out["outside_ip"] == "ENETUNREACH"
    assert out["interfaces"] == ["lo"]
    assert out["proxy_env"] == []
    assert out["abstract_unix"] == "ECONNREFUSED"  # abstract sockets are per network namespace
    if host_unix["run"]:
        assert out["run_unix"] == "ENOENT"  # /run is a private tmpfs


def test_open_shares_host_network(sandbox, servers, host_unix) -> None:
    sb = sandbox(NetworkPolicy("open"))
    a = servers["allowed"]
    out = sb.json(
        f"""
print(json.dumps({{
    "host_loopback_http": get("http://127.0.0.1:{a}/", proxy=False),
    "abstract_unix": unix({host_unix["abstract"]!r}, abstract=True),
}}))
"""
    )
    assert out["host_loopback_http"] == f"hello from {a}"
    assert out["abstract_unix"] == "connected"


def test_allowlist_only_named_targets(sandbox, servers) -> None:
    a, d = servers["allowed"], servers["denied"]
    sb = sandbox(NetworkPolicy("allowlist", allow=[f"127.0.0.1:{a}"]))
    out = sb.json(
        f"""
print(json.dumps({{
    "env": os.environ.get("HTTPS_PROXY"),
    "no_proxy": os.environ.get("NO_PROXY"),
    "proxy_http_allowed": get("http://127.0.0.1:{a}/"),
    "proxy_http_denied": get("http://127.0.0.1:{d}/"),
    "connect_allowed": connect("127.0.0.1:{a}"),
    "connect_denied": connect("127.0.0.1:{d}"),
    "connect_name_not_ip": connect("localhost:{a}"),
    "tunnel_allowed": get("http://127.0.0.1:{a}/", proxy=False),
    "direct_denied": tcp("127.0.0.1", {d}),
    "outside_ip": tcp("192.0.2.1", 80),
}}))
"""
    )
    assert out["env"] == "http://127.0.0.1:3128"
    assert out["no_proxy"] is None
    assert out["proxy_http_allowed"] == f"hello from {a}"
    assert out["proxy_http_denied"] == "http-403"
    assert out["connect_allowed"] == f"hello from {a}"
    assert out["connect_denied"] == "status-403"
    assert out["connect_name_not_ip"] == "status-403"  # exact match: localhost != 127.0.0.1
    assert out["tunnel_allowed"] == f"hello from {a}"
    assert out["direct_denied"] == "ECONNREFUSED"
    assert out["outside_ip"] == "ENETUNREACH"
    refused = {x.target for x in sb.proxy.decisions if not x.allowed}
    assert f"127.0.0.1:{d}" in refused and f"localhost:{a}" in refused


def test_mcp_only_reaches_mcp_and_model_api_only(sandbox, servers) -> None:
    a, d, m = servers["allowed"], servers["denied"], servers["model"]
    sb = sandbox(
        NetworkPolicy("mcp-only", mcp=[f"http://127.0.0.1:{a}/mcp"], model_api=[f"127.0.0.1:{m}"])
    )
    out = sb.json(
        f"""
print(json.dumps({{
    "mcp_via_proxy": get("http://127.0.0.1:{a}/mcp"),
    "mcp_direct_url": get("http://127.0.0.1:{a}/mcp", proxy=False),
    "model_via_connect": connect("127.0.0.1:{m}"),
    "model_direct_url": get("http://127.0.0.1:{m}/v1/messages", proxy=False),
    "other_via_proxy": get("http://127.0.0.1:{d}/"),
    "other_connect": connect("127.0.0.1:{d}"),
    "other_direct": tcp("127.0.0.1", {d}),
}}))
"""
    )
    assert out["mcp_via_proxy"] == f"hello from {a}"
    assert out["mcp_direct_url"] == f"hello from {a}"
    assert out["model_via_connect"] == f"hello from {m}"
    assert out["model_direct_url"] == f"hello from {m}"
    assert out["other_via_proxy"] == "http-403"
    assert out["other_connect"] == "status-403"
    assert out["other_direct"] == "ECONNREFUSED"


@pytest.mark.parametrize("mode", ["none", "allowlist"])
def test_exit_status_passes_through(sandbox, servers, mode) -> None:
    allow = [f"127.0.0.1:{servers['allowed']}"] if mode == "allowlist" else []
    sb = sandbox(NetworkPolicy(mode, allow=allow))
    assert sb.run("import sys; sys.exit(7)").returncode == 7
    assert sb.run("import os, signal; os.kill(os.getpid(), signal.SIGTERM)").returncode in (
        128 + 15,
        -15,
    )
