"""The HTTP protocol ``harness serve`` runs uvicorn with: uvicorn's own (h11, or httptools
when installed) with a deadline on a request's headers and a cap on connections.

uvicorn bounds only the idle time between requests of a kept-alive connection; a client that
connects and sends its headers a byte at a time holds the connection forever. Here each
connection must have sent a request's headers within ``read_timeout`` seconds of connecting
(or of the previous response), else it is answered 408 and closed; the body has its own
deadline where the API reads it (:func:`harness_core.serve.api.read_body`). A response being
sent - an event stream for hours - is not timed. A request arriving while more than
``max_connections`` connections are open is answered 503 and its connection closed.
"""

from __future__ import annotations

import json
from typing import Any

from harness_hookspecs import HarnessError

from . import api


def error_bytes(status: int, phrase: str, error: HarnessError) -> bytes:
    """A whole HTTP/1.1 response in the API's error shape, closing the connection."""
    body = json.dumps(api.error_body(error)).encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def too_many(limit: int) -> HarnessError:
    return HarnessError(
        "provider-unavailable", f"harness serve holds {limit} connections already: retry later"
    )


def protocol_class(read_timeout: float, max_connections: int) -> type[Any]:
    """uvicorn's HTTP protocol class with the headers' deadline and the connection cap."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    # the headers late: the same error as a body late (api.read_body)
    late = error_bytes(408, "Request Timeout", api.RequestTimeout(read_timeout))
    full = json.dumps(api.error_body(too_many(max_connections))).encode()
    full_head = [(b"content-type", b"application/json"), (b"connection", b"close")]

    class Bounded(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._headers_deadline: Any = None
            app: Any = getattr(self, "app")  # noqa: B009 - uvicorn sets it untyped

            async def capped(scope: Any, receive: Any, send: Any) -> None:
                if len(self.connections) > max_connections:
                    start = {"type": "http.response.start", "status": 503, "headers": full_head}
                    await send(start)
                    await send({"type": "http.response.body", "body": full})
                    return
                await app(scope, receive, send)

            setattr(self, "app", capped)  # noqa: B010

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Any) -> None:
            if self._headers_deadline is not None:
                self._headers_deadline.cancel()
                self._headers_deadline = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._headers_deadline is not None:
                self._headers_deadline.cancel()
            self._headers_deadline = self.loop.call_later(read_timeout, self._late)

        def _late(self) -> None:
            self._headers_deadline = None
            cycle = self.cycle
            if self.transport.is_closing() or (cycle is not None and not cycle.response_complete):
                return  # a request is being answered (its body has its own deadline)
            self.transport.write(late)
            self.transport.close()

    return Bounded
