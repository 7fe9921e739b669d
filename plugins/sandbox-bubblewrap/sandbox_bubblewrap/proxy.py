"""Host-side allowlist proxy for the ``allowlist`` and ``mcp-only`` network policies.

An HTTP proxy listening on a Unix socket (bind-mounted read-only into the sandbox). It accepts
``CONNECT host:port`` (any TCP, usually TLS) and plain-HTTP absolute-URI requests
(``GET http://host:port/path``), and opens a TCP connection only when the target
:class:`~sandbox_bubblewrap.policy.Endpoint` is in the allowlist, compared exactly after host
normalisation. Everything else gets ``403`` and is recorded in :attr:`AllowlistProxy.decisions`.

It runs its own anyio event loop in a private thread (``start_blocking_portal``), so a host on
asyncio or trio just calls the synchronous :meth:`start`/:meth:`close` (both quick) and nothing
of the proxy ever runs on the host's loop.
"""

from __future__ import annotations

import collections
import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, SocketStream
from anyio.from_thread import BlockingPortal, start_blocking_portal
from anyio.streams.buffered import BufferedByteReceiveStream

from .policy import Endpoint

_HEAD_LIMIT = 16384
_HOP_BY_HOP = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


@dataclass(frozen=True)
class Decision:
    target: str  # as the client asked (normalised authority when parseable)
    allowed: bool
    reason: str  # "allowed" | "not-allowlisted" | "bad-request" | "upstream-failed"


class _Refused(Exception):
    def __init__(self, status: bytes, reason: str, target: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.target = target


def _parse_head(head: bytes) -> tuple[bytes, Endpoint, bytes | None]:
    """Return (method, endpoint, rewritten head or None for CONNECT)."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _Refused(b"400 Bad Request", "bad-request")
    method, target, version = parts
    try:
        text = target.decode("ascii")
    except UnicodeDecodeError:
        raise _Refused(b"400 Bad Request", "bad-request") from None
    if method == b"CONNECT":
        try:
            return method, Endpoint.parse(text), None
        except ValueError:
            raise _Refused(b"400 Bad Request", "bad-request", text) from None
    url = urlsplit(text)
    if url.scheme.lower() != "http" or not url.hostname:
        # https:// must use CONNECT; origin-form means the client did not mean a proxy.
        raise _Refused(b"400 Bad Request", "bad-request", text)
    try:
        endpoint = Endpoint(url.hostname, url.port or 80)
    except ValueError:
        raise _Refused(b"400 Bad Request", "bad-request", text) from None
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    out = [b" ".join((method, path.encode("ascii"), version))]
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if name in _HOP_BY_HOP:
            continue
        out.append(line)
    # One request per upstream connection: the proxy never re-targets a kept-alive connection.
    out.append(b"Connection: close")
    return method, endpoint, b"\r\n".join(out) + b"\r\n\r\n"


async def _pump(src: ByteReceiveStream, dst: ByteSendStream) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in src:
            await dst.send(chunk)
    with contextlib.suppress(Exception):
        await dst.send_eof()  # type: ignore[attr-defined]


class AllowlistProxy:
    """``with AllowlistProxy(sock_path, allowed) as proxy: ...`` or ``start()``/``close()``."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        allowed: Iterable[Endpoint],
        *,
        connect_timeout: float = 10.0,
        head_timeout: float = 30.0,
        max_decisions: int = 1000,
    ) -> None:
        self.socket_path = Path(socket_path)
        self.allowed = frozenset(allowed)
        self.connect_timeout = connect_timeout
        self.head_timeout = head_timeout
        self.decisions: collections.deque[Decision] = collections.deque(maxlen=max_decisions)
        self._portal_cm: Any = None
        self._portal: BlockingPortal | None = None
        self._scope: anyio.CancelScope | None = None
        self._future: Any = None

    # -- lifecycle (synchronous, callable from any thread not running this proxy) --------------
    def start(self) -> AllowlistProxy:
        if self._portal is not None:
            raise RuntimeError("proxy already started")
        if len(os.fsencode(self.socket_path)) > 107:
            raise ValueError(f"Unix socket path too long (max 107 bytes): {self.socket_path}")
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._future, _ = self._portal.start_task(self._serve)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        portal, self._portal = self._portal, None
        if portal is not None:
            scope = self._scope
            if scope is not None:
                portal.call(scope.cancel)
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = None
        with contextlib.suppress(FileNotFoundError):
            if self.socket_path.is_socket():
                self.socket_path.unlink()

    def __enter__(self) -> AllowlistProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving --------------------------------------------------------------------------------
    async def _serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        listener = await anyio.create_unix_listener(self.socket_path)
        os.chmod(self.socket_path, 0o600)  # the sandbox runs as the same uid
        with anyio.CancelScope() as scope:
            self._scope = scope
            async with listener:
                task_status.started()
                await listener.serve(self._handle)

    def _record(self, target: str, allowed: bool, reason: str) -> None:
        self.decisions.append(Decision(target, allowed, reason))

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            reader = BufferedByteReceiveStream(client)
            try:
                with anyio.fail_after(self.head_timeout):
                    head = await reader.receive_until(b"\r\n\r\n", _HEAD_LIMIT)
                _method, endpoint, rewritten = _parse_head(head)
                if endpoint not in self.allowed:
                    raise _Refused(b"403 Forbidden", "not-allowlisted", str(endpoint))
                try:
                    with anyio.fail_after(self.connect_timeout):
                        upstream = await anyio.connect_tcp(endpoint.host, endpoint.port)
                except (OSError, TimeoutError):
                    raise _Refused(b"502 Bad Gateway", "upstream-failed", str(endpoint)) from None
            except _Refused as refused:
                self._record(refused.target, False, refused.reason)
                with contextlib.suppress(Exception):
                    await client.send(
                        b"HTTP/1.1 " + refused.status + b"\r\nContent-Length: 0\r\n"
                        b"Connection: close\r\n\r\n"
                    )
                return
            except (anyio.IncompleteRead, anyio.DelimiterNotFound, TimeoutError):
                self._record("", False, "bad-request")
                return
            except (anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                return
            self._record(str(endpoint), True, "allowed")
            async with upstream:
                try:
                    if rewritten is None:
                        await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    else:
                        await upstream.send(rewritten)
                except (anyio.BrokenResourceError, OSError):
                    return
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_pump, reader, upstream)
                    tg.start_soon(_pump, upstream, client)
