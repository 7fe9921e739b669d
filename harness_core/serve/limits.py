"""Limits of ``harness serve`` shared by its argument parser and its app (a leaf module: the
parser imports it without pulling in the app)."""

from __future__ import annotations

#: The largest request body ``harness serve`` reads (a prompt of the contract's largest text,
#: 1 MiB characters, fits even as ``\uXXXX`` escapes); a larger one is refused with 413.
DEFAULT_MAX_BODY = 8 * 1024 * 1024

#: Seconds a client has to send a request's headers (from connecting, or from the previous
#: response on a kept-alive connection), and again its body: past either it is answered 408
#: and the connection closed (a client sending slowly holds no connection for long).
DEFAULT_READ_TIMEOUT = 30.0

#: The connections ``harness serve`` holds at once (event streams count); a request on one
#: more is answered 503 and that connection closed.
DEFAULT_MAX_CONNECTIONS = 512
