"""``harness fake-model serve`` / ``python -m harness_fake_model serve``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from .server import FakeModelServer


def main(argv: Sequence[str] | None = None) -> int:
    """``harness fake-model serve --port P --script FILE``: serve until interrupted."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        args = args[1:]
    parser = argparse.ArgumentParser(
        prog="harness fake-model serve",
        description="Serve a scripted fake model (Anthropic Messages, OpenAI Responses and "
        "Chat Completions APIs) on 127.0.0.1.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port (default)")
    parser.add_argument("--script", help="JSON script: a list of steps or {steps, default_text}")
    parser.add_argument("--default-text", default=None)
    parser.add_argument("--record", help="append every request as JSON lines to this file")
    ns = parser.parse_args(args)
    server = FakeModelServer(
        ns.script or (),
        host=ns.host,
        port=ns.port,
        default_text=ns.default_text,
        record_file=ns.record,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server:
            print(f"fake model server listening on {server.base_url}", flush=True)
            while not stop.wait(0.5):
                pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
