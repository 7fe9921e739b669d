"""Run ``harness serve`` in a thread for tests and benchmarks, and talk to it over HTTP.

``with ServeThread(plugin, ledger=..., state_dir=...) as server:`` starts a real uvicorn server
on 127.0.0.1 (an ephemeral port) over a Controller holding exactly the given plugin objects;
``server.call`` sends JSON, ``server.stream`` reads server-sent events. Standard library only.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

TEST_TOKEN = "test-token-0123456789abcdef"


class ServeThread:
    def __init__(
        self,
        *plugins: Any,
        ledger: str,
        state_dir: Any,
        token: str = TEST_TOKEN,
        serve_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ):
        """``serve_options``: keyword arguments of :func:`harness_core.serve.app.serve`
        (``read_timeout``, ``max_connections``, ``max_body``...); ``kwargs``: the
        Controller's."""
        self.plugins = plugins
        self.serve_options = serve_options or {}
        self.ledger = ledger
        self.state_dir = state_dir
        self.token = token
        self.controller_kwargs = kwargs
        self.url = ""
        self._handle: Any = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="harness-serve", daemon=True)

    def _run(self) -> None:
        import anyio

        from ..controller import Controller
        from ..plugins import plugins_from
        from ..serve.app import serve

        def ready(url: str, handle: Any) -> None:
            self.url, self._handle = url, handle
            self._ready.set()

        async def main() -> None:
            async with Controller(
                plugins=plugins_from(self.plugins),
                ledger=self.ledger,
                state_dir=self.state_dir,
                **self.controller_kwargs,
            ) as controller:
                await serve(
                    controller,
                    host="127.0.0.1",
                    port=0,
                    token=self.token,
                    ready=ready,
                    **self.serve_options,
                )

        try:
            anyio.run(main)
        except BaseException as error:
            self._error = error
        finally:
            self._ready.set()

    def __enter__(self) -> ServeThread:
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None or not self.url:
            raise RuntimeError(f"harness serve did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.should_exit = True
        self._thread.join(30)

    # -- client ------------------------------------------------------------------------------

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)

    def _headers(self, token: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | bool | None = True,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> tuple[int, Any]:
        """Send a request; return ``(status, parsed JSON or text)``. ``token=True``: ours."""
        connection = self._connection(timeout)
        try:
            sent = self._headers(self.token if token is True else (token or None))
            sent.update(headers or {})
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read().decode()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw

    def stream(
        self, method: str, path: str, body: Any = None, *, timeout: float = 60
    ) -> Iterator[tuple[str, Any]]:
        """Yield ``(event name, parsed data)`` for each server-sent event until the stream ends."""
        connection = self._connection(timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers=self._headers(self.token))
            response = connection.getresponse()
            if response.status != 200:
                raise AssertionError(f"{response.status}: {response.read()[:300]!r}")
            name, lines = "message", list[str]()
            for raw in response:
                line = raw.decode().rstrip("\n")
                if not line:
                    if lines:
                        yield name, json.loads("\n".join(lines))
                    name, lines = "message", list[str]()
                elif line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    lines.append(line[6:])
        finally:
            connection.close()
