"""Temporal over TLS (issue 33): the dev server speaks plaintext, so a TLS-terminating proxy on
127.0.0.1 (Python's ssl, ALPN h2, certificates from openssl) stands in front of it, as a load
balancer or Temporal Cloud's endpoint would. A worker and ``harness run --temporal`` reach it
with a private CA and mutual TLS and run a turn; a client without the CA, without its
certificate, or in plaintext is refused in one line; bad options are one line each."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executor_temporal.connection import TemporalConnection
from executor_temporal.shapes import TASK_QUEUE
from harness_hookspecs import HarnessError
from temporal_workers import HARNESS, WorkerProcess

NAME = "temporal.test"  # the name on the server's certificate (not the address)


def _openssl(*argv: str, cwd: Path) -> None:
    subprocess.run(["openssl", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    root = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=root)  # fmt: skip
    # v3 certificates (an extension each): rustls refuses version 1
    for name, extension in (
        ("server", f"subjectAltName=DNS:{NAME}\nextendedKeyUsage=serverAuth"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=root)  # fmt: skip
        (root / f"{name}.ext").write_text(extension + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", f"{name}.pem",
                 "-extfile", f"{name}.ext", cwd=root)  # fmt: skip
    return root


class TlsProxy:
    """Terminates TLS on 127.0.0.1 (client certificates required when ``mutual``) and pipes
    the bytes to ``upstream`` (the dev server's plaintext gRPC port)."""

    def __init__(self, upstream: str, pki: Path, *, mutual: bool) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(pki / "server.pem", pki / "server.key")
        self.context.set_alpn_protocols(["h2"])
        if mutual:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(pki / "ca.pem")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.handshakes_refused = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            secure = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshakes_refused += 1
            raw.close()
            return
        upstream = socket.create_connection(self.upstream)
        threading.Thread(target=_pipe, args=(upstream, secure), daemon=True).start()
        _pipe(secure, upstream)

    def close(self) -> None:
        self.listener.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture(scope="module")
def mutual_proxy(temporal_address: str, pki: Path) -> Iterator[TlsProxy]:
    proxy = TlsProxy(temporal_address, pki, mutual=True)
    yield proxy
    proxy.close()


def _reconcile(address: str, ledger: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, "reconcile-temporal", "--temporal", address, "--ledger", ledger, "--dry-run",
         *options],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_turn_runs_over_mutual_tls_and_clients_without_it_are_refused(
    mutual_proxy: TlsProxy, pki: Path, postgresql_ledger_url: str, tmp_path: Path, workspace,
    steps_config,
) -> None:  # fmt: skip
    tls = {"tls_ca": str(pki / "ca.pem"), "tls_cert": str(pki / "client.pem"),
           "tls_key": str(pki / "client.key"), "tls_server_name": NAME}  # fmt: skip
    worker = WorkerProcess(
        "tls", mutual_proxy.address, TASK_QUEUE, postgresql_ledger_url, tmp_path, **tls
    )
    try:
        worker.wait_ready()
        run = [HARNESS, "run", "stdio-jsonl", "over tls", "--temporal", mutual_proxy.address,
               "--ledger", postgresql_ledger_url, "--workspace", workspace,
               "--config", "command=" + json.dumps(steps_config["command"]), "--close", "--json",
               *[f"--temporal-{key.replace('_', '-')}={value}" for key, value in tls.items()]]  # fmt: skip
        done = subprocess.run(run, capture_output=True, text=True, timeout=120)
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr + worker.log.read_text()[-3000:]
    assert json.loads(done.stdout.splitlines()[-1])["type"] == "turn.completed"

    refused_before = mutual_proxy.handshakes_refused
    ca = ("--tls-ca", str(pki / "ca.pem"), "--tls-server-name", NAME)
    mutual = ("--tls-cert", str(pki / "client.pem"), "--tls-key", str(pki / "client.key"))
    assert _reconcile(mutual_proxy.address, postgresql_ledger_url, *ca, *mutual).returncode == 0
    for options in [ca, ("--tls", "--tls-server-name", NAME, *mutual), ()]:
        # no client certificate / the system's roots do not know the CA / plaintext
        failed = _reconcile(mutual_proxy.address, postgresql_ledger_url, *options)
        assert failed.returncode != 0
        how = " over TLS" if options else ""
        assert failed.stderr.splitlines() == [
            f"harness: error: provider-unavailable: cannot reach the Temporal service{how}"
        ], failed.stderr
    assert mutual_proxy.handshakes_refused > refused_before


def test_bad_connection_options_are_one_line_each(pki: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    (tmp_path / "key").write_text("secret-key-123\n")
    (tmp_path / "not-pem").write_text("hello\n")
    cases = [
        (["--tls-cert", str(pki / "client.pem")], "a TLS client certificate and key go together"),
        (["--tls-ca", str(tmp_path / "missing.pem")], "cannot read --tls-ca"),
        (["--tls-ca", str(tmp_path / "not-pem")], "is not a PEM file"),
        (["--api-key-file", str(tmp_path / "empty")], "holds no key"),
        (["--temporal", "nowhere"], "is not HOST:PORT"),
    ]
    for options, hint in cases:
        done = subprocess.run(
            [HARNESS, "reconcile-temporal", "--ledger", f"sqlite:///{tmp_path}/l.sqlite",
             *options],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, (options, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "invalid-request" in done.stderr
        assert hint in done.stderr, done.stderr
    run = subprocess.run(
        [HARNESS, "run", "echo", "x", "--temporal", "127.0.0.1:1", "--temporal-tls-key",
         str(pki / "client.key")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "certificate and key go together" in run.stderr, run.stderr
    # an API key (from the file or the environment) turns TLS on and never shows in a repr
    keyed = TemporalConnection.from_args(
        _namespace(api_key_file=str(tmp_path / "key")), "127.0.0.1:7233"
    )
    assert keyed.uses_tls and keyed.connect_arguments()["api_key"] == "secret-key-123"
    assert "secret-key-123" not in repr(keyed)
    os.environ["TEMPORAL_API_KEY"] = "from-the-env"
    try:
        assert TemporalConnection.from_args(_namespace(), "h:1").api_key == "from-the-env"
    finally:
        del os.environ["TEMPORAL_API_KEY"]
    with pytest.raises(HarnessError):
        TemporalConnection("127.0.0.1:7233", tls_cert=b"-----BEGIN x")


def _namespace(**values: str) -> object:
    import argparse

    return argparse.Namespace(**values)
