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


def probe_all(sb, **expressions: str) -> dict:
    """Evaluates each Python expression inside ``sb``: ``{name: its value}``."""
    items = "".join(f"    {name!r}: {expression},\n" for name, expression in expressions.items())
    return sb.json(f"print(json.dumps({{\n{items}}}))")


def test_none_reaches_nothing(sandbox, servers, host_unix) -> None:
    sb = sandbox(NetworkPolicy("none"))
    a, run = servers["allowed"], host_unix["run"]
    out = probe_all(
        sb,
        host_loopback_tcp=f'tcp("127.0.0.1", {a})',
        host_loopback_http=f'get("http://127.0.0.1:{a}/", proxy=False)',
        outside_ip='tcp("192.0.2.1", 80)',
        interfaces='sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])',
        proxy_env='[k for k in os.environ if k.lower().endswith("_proxy")]',
        abstract_unix=f"unix({host_unix['abstract']!r}, abstract=True)",
        run_unix=f'unix({run!r}) if {run!r} else "skipped"',
    )
    assert out["host_loopback_tcp"] == "ECONNREFUSED"  # the sandbox's own, empty loopback
    assert out["host_loopback_http"] == "ECONNREFUSED"
    assert out["outside_ip"] == "ENETUNREACH"
    assert out["interfaces"] == ["lo"]
    assert out["proxy_env"] == []
    assert out["abstract_unix"] == "ECONNREFUSED"  # abstract sockets are per network namespace
    if run:
        assert out["run_unix"] == "ENOENT"  # /run is a private tmpfs


def test_open_shares_host_network(sandbox, servers, host_unix) -> None:
    a = servers["allowed"]
    out = probe_all(
        sandbox(NetworkPolicy("open")),
        host_loopback_http=f'get("http://127.0.0.1:{a}/", proxy=False)',
        abstract_unix=f"unix({host_unix['abstract']!r}, abstract=True)",
    )
    assert out["host_loopback_http"] == f"hello from {a}"
    assert out["abstract_unix"] == "connected"


def assert_probes(sb, table: dict[str, tuple[str, object]]) -> None:
    """Runs each ``name: (expression, expected)`` inside ``sb``; every value must be as expected."""
    out = probe_all(sb, **{name: expression for name, (expression, _) in table.items()})
    assert out == {name: expected for name, (_, expected) in table.items()}


def test_allowlist_only_named_targets(sandbox, servers) -> None:
    a, d = servers["allowed"], servers["denied"]
    sb = sandbox(NetworkPolicy("allowlist", allow=[f"127.0.0.1:{a}"]))
    hello = f"hello from {a}"
    assert_probes(
        sb,
        {
            "env": ('os.environ.get("HTTPS_PROXY")', "http://127.0.0.1:3128"),
            "no_proxy": ('os.environ.get("NO_PROXY")', None),
            "proxy_http_allowed": (f'get("http://127.0.0.1:{a}/")', hello),
            "proxy_http_denied": (f'get("http://127.0.0.1:{d}/")', "http-403"),
            "connect_allowed": (f'connect("127.0.0.1:{a}")', hello),
            "connect_denied": (f'connect("127.0.0.1:{d}")', "status-403"),
            # exact match: localhost != 127.0.0.1
            "connect_name_not_ip": (f'connect("localhost:{a}")', "status-403"),
            "tunnel_allowed": (f'get("http://127.0.0.1:{a}/", proxy=False)', hello),
            "direct_denied": (f'tcp("127.0.0.1", {d})', "ECONNREFUSED"),
            "outside_ip": ('tcp("192.0.2.1", 80)', "ENETUNREACH"),
        },
    )
    refused = {x.target for x in sb.proxy.decisions if not x.allowed}
    assert f"127.0.0.1:{d}" in refused and f"localhost:{a}" in refused


def test_mcp_only_reaches_mcp_and_model_api_only(sandbox, servers) -> None:
    a, d, m = servers["allowed"], servers["denied"], servers["model"]
    policy = NetworkPolicy(
        "mcp-only", mcp=[f"http://127.0.0.1:{a}/mcp"], model_api=[f"127.0.0.1:{m}"]
    )
    mcp, model = f"http://127.0.0.1:{a}/mcp", f"http://127.0.0.1:{m}/v1/messages"
    assert_probes(
        sandbox(policy),
        {
            "mcp_via_proxy": (f"get({mcp!r})", f"hello from {a}"),
            "mcp_direct_url": (f"get({mcp!r}, proxy=False)", f"hello from {a}"),
            "model_via_connect": (f'connect("127.0.0.1:{m}")', f"hello from {m}"),
            "model_direct_url": (f"get({model!r}, proxy=False)", f"hello from {m}"),
            "other_via_proxy": (f'get("http://127.0.0.1:{d}/")', "http-403"),
            "other_connect": (f'connect("127.0.0.1:{d}")', "status-403"),
            "other_direct": (f'tcp("127.0.0.1", {d})', "ECONNREFUSED"),
        },
    )


@pytest.mark.parametrize("mode", ["none", "allowlist"])
def test_exit_status_passes_through(sandbox, servers, mode) -> None:
    allow = [f"127.0.0.1:{servers['allowed']}"] if mode == "allowlist" else []
    sb = sandbox(NetworkPolicy(mode, allow=allow))
    assert sb.run("import sys; sys.exit(7)").returncode == 7
    assert sb.run("import os, signal; os.kill(os.getpid(), signal.SIGTERM)").returncode in (
        128 + 15,
        -15,
    )
