"""`harness serve` reads a body only up to its cap (issue 26, item 1): a 200 MB body - with its
length declared, or chunked without one - is a 413 JSON error, and the server's memory grows by
less than 50 MB; ``--max-body`` sets the cap."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers import harness_cmd

pytest.importorskip("uvicorn", reason="harness serve needs the serve extra (uvicorn)")

TOKEN = "body-cap-token-0123456789abcdef"
MB = 1024 * 1024


class Served:
    def __init__(self, tmp_path: Path, *options: str):
        env = dict(os.environ, SERVE_TOKEN=TOKEN, HARNESS_STATE_DIR=str(tmp_path / "state"))
        self.process = subprocess.Popen(
            [
                *harness_cmd(),
                "serve",
                "--port",
                "0",
                "--token-env",
                "SERVE_TOKEN",
                *options,
                "--ledger",
                f"sqlite:///{tmp_path}/serve.sqlite",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        first = self.process.stdout.readline()
        assert "listening on" in first, first + self.process.stderr.read()
        self.port = int(first.rsplit(":", 1)[1].strip().rstrip("/"))

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def post(self, path: str, head: dict[str, str], body_chunks) -> tuple[int, dict]:
        """Send the request from a thread (the server may answer before it has all of it)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        lines = [
            f"POST {path} HTTP/1.1",
            "Host: 127.0.0.1",
            f"Authorization: Bearer {TOKEN}",
            "Content-Type: application/json",
            *(f"{k}: {v}" for k, v in head.items()),
        ]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

        def send() -> None:
            try:
                for chunk in body_chunks:
                    sock.sendall(chunk)
            except OSError:
                pass  # the server answered and closed: that is the point

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        reply = b""
        try:
            while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < _length(reply):
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
        finally:
            sock.close()
        sender.join(60)
        head_text, _, payload = reply.partition(b"\r\n\r\n")
        status = int(head_text.split()[1])
        assert b"content-type: application/json" in head_text.lower(), head_text
        return status, json.loads(payload[: _length(reply)])

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _length(reply: bytes) -> int:
    for line in reply.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 60


def _body(size: int, chunked: bool):
    chunk = b"x" * MB
    prefix = b'{"harness": "echo", "config": {"k": "'
    sent = 0
    pieces = [prefix]
    while sent < size:
        pieces.append(chunk)
        sent += len(chunk)
        if len(pieces) >= 8 or sent >= size:
            data = b"".join(pieces)
            pieces = []
            yield (b"%x\r\n%s\r\n" % (len(data), data)) if chunked else data
    if chunked:
        yield b'"}}'.join([b"3\r\n", b"\r\n0\r\n\r\n"])
    else:
        yield b'"}}'


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mb_body_is_a_413_and_the_server_stays_small(tmp_path, chunked):
    served = Served(tmp_path)
    try:
        size = 200 * MB
        baseline = served.rss()
        head = (
            {"Transfer-Encoding": "chunked"}
            if chunked
            else {"Content-Length": str(size + len(b'{"harness": "echo", "config": {"k": "') + 3)}
        )
        status, answer = served.post("/api/sessions", head, _body(size, chunked))
        assert status == 413
        assert answer["error"]["reason"] == "invalid-request"
        assert "larger than" in answer["error"]["hint"]
        growth = served.rss() - baseline
        assert growth < 50 * MB, f"server RSS grew {growth / MB:.0f} MB"
        # it lives on and wrote nothing
        status, _ = served.post("/api/sessions", {"Content-Length": "9"}, [b'{"x": 1}\n'])
        assert status == 400
    finally:
        served.close()


def test_max_body_sets_the_cap(tmp_path):
    # The cap is the accepted body's size (it names tmp_path, whose length varies: a pytest-xdist
    # worker's is longer), and a body one byte larger is refused.
    small = json.dumps({"harness": "echo", "workspace": str(tmp_path)}).encode()
    served = Served(tmp_path, "--max-body", str(len(small)))
    try:
        body = small[:-1] + b" }"
        status, answer = served.post("/api/sessions", {"Content-Length": str(len(body))}, [body])
        assert status == 413
        assert answer["error"]["hint"] == f"the body is larger than {len(small)} bytes"
        status, answer = served.post("/api/sessions", {"Content-Length": str(len(small))}, [small])
        assert status == 201, answer
    finally:
        served.close()
