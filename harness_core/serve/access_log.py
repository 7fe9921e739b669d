"""``harness serve``'s request log: one line per request on stderr as its response starts
(a server-sent-events stream is logged when it opens, not when it ends).

    127.0.0.1:50312 - [04/Dec/2026 14:41:07] "GET /?q=readme HTTP/1.1" 200 3.1 ms

Nothing secret is in a line: the bearer token travels in a header (never logged) or in the
URL's fragment (never sent to the server).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

Scope = dict[str, Any]
ASGIApp = Callable[..., Any]


def request_line(scope: Scope) -> str:
    path = scope.get("path", "")
    query = scope.get("query_string", b"")
    if query:
        path += "?" + query.decode("latin-1")
    return f"{scope.get('method', '-')} {path} HTTP/{scope.get('http_version', '1.1')}"


def client_of(scope: Scope) -> str:
    client = scope.get("client")
    if not client:
        return "-"
    host, port = client[0], client[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


class AccessLog:
    """ASGI middleware that writes one line per HTTP request to ``stream`` (stderr)."""

    def __init__(self, app: ASGIApp, stream: TextIO | None = None) -> None:
        self.app = app
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def logged(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                self.write(scope, message.get("status", 0), time.perf_counter() - started)
            await send(message)

        await self.app(scope, receive, logged)

    def write(self, scope: Scope, status: int, seconds: float) -> None:
        stamp = time.strftime("%d/%b/%Y %H:%M:%S")
        line = (
            f'{client_of(scope)} - [{stamp}] "{request_line(scope)}" {status} '
            f"{seconds * 1000:.1f} ms\n"
        )
        stream = self.stream or sys.stderr
        try:
            stream.write(line)
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or full stderr must not fail the request
