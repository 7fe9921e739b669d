"""Fixtures for the bubblewrap plugin tests.

Tests that need bwrap skip with the probe's reason when bwrap is missing or cannot create its
namespaces; set ``HARNESS_REQUIRE_BWRAP=1`` (CI) to turn that skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sandbox_bubblewrap import (
    BwrapUnavailable,
    NetworkPolicy,
    SandboxSpec,
    build_prefix,
    probe_bwrap,
)
from sandbox_bubblewrap.proxy import AllowlistProxy

PYTHON = os.path.realpath(sys.executable)


@pytest.fixture(scope="session")
def bwrap() -> str:
    try:
        return probe_bwrap()
    except BwrapUnavailable as exc:
        if os.environ.get("HARNESS_REQUIRE_BWRAP") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BWRAP=1 but bwrap is unusable: {exc}")
        pytest.skip(f"bubblewrap unavailable: {exc}")


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello from {self.server.server_port}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def servers() -> Iterator[dict[str, int]]:
    """Three HTTP servers on host loopback: ``allowed``, ``denied``, ``model``."""
    made = {
        name: ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        for name in ("allowed", "denied", "model")
    }
    for srv in made.values():
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield {name: srv.server_port for name, srv in made.items()}
    for srv in made.values():
        srv.shutdown()
        srv.server_close()


#: Prepended to every in-sandbox snippet: tiny probes that return strings, never raise (it imports
#: json and os, which the snippets use too).
PROBES = Path(__file__).with_name("probe_helpers.py").read_text() + "import json\n"


class Sandbox:
    """Runs Python snippets inside bwrap under one policy; the snippet prints one JSON value."""

    def __init__(self, bwrap: str, workspace: Path, policy: NetworkPolicy) -> None:
        self.workspace = workspace
        self.policy = policy
        self.proxy: AllowlistProxy | None = None
        self._sockdir: str | None = None
        sock = None
        if policy.needs_proxy:
            self._sockdir = tempfile.mkdtemp(prefix="bwrap-proxy-")  # short: sun_path is 108 bytes
            sock = Path(self._sockdir) / "proxy.sock"
            self.proxy = AllowlistProxy(sock, policy.allowed()).start()
        self.prepared = build_prefix(
            SandboxSpec(workspace=workspace, network=policy), proxy_socket=sock, bwrap=bwrap
        )

    def argv(self, code: str) -> list[str]:
        """``code`` runs after :data:`PROBES` (tcp, get, connect, unix, write helpers)."""
        return self.prepared.argv([PYTHON, "-I", "-c", PROBES + code])

    def run(self, code: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(code),
            cwd=self.prepared.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def json(self, code: str) -> object:
        proc = self.run(code)
        assert proc.returncode == 0, (proc.returncode, proc.stderr)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def close(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)


@pytest.fixture
def sandbox(bwrap: str, tmp_path: Path) -> Iterator[object]:
    made: list[Sandbox] = []

    def make(policy: NetworkPolicy) -> Sandbox:
        ws = tmp_path / f"ws{len(made)}"
        ws.mkdir()
        sb = Sandbox(bwrap, ws, policy)
        made.append(sb)
        return sb

    yield make
    for sb in made:
        sb.close()
