"""The ASGI application and the uvicorn server that runs it over one controller."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..approvals import PendingApprovals
from ..controller import Controller
from . import api, sessions_page, viewer
from .access_log import AccessLog
from .limits import DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT
from .runner import Server

__all__ = ["create_app", "serve"]

STATIC = Path(__file__).with_name("static")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def allowed_hosts(host: str) -> list[str]:
    """Host headers to accept: on loopback only loopback names (a DNS-rebinding page cannot
    reach the API under its own name); a host bound elsewhere was chosen on purpose."""
    if host in LOOPBACK:
        return ["127.0.0.1", "localhost", "[::1]"]
    return ["*"]


def create_app(server: Server, host: str = "127.0.0.1", *, access_log: bool = False) -> Starlette:
    """The API, the viewer and its static files; ``access_log``: a line per request on stderr."""
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))]
    if access_log:
        middleware.insert(0, Middleware(AccessLog))  # outermost: refused hosts are logged too
    app = Starlette(
        routes=[
            *api.routes(),
            Route("/", sessions_page.index, methods=["GET"]),
            Route("/sessions/{id}", viewer.session_page, methods=["GET"]),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=middleware,
    )
    app.state.server = server
    return app


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _uvicorn_server(config: Any, on_shutdown: Callable[[], None]) -> Any:
    import uvicorn

    class QuietServer(uvicorn.Server):  # type: ignore[misc]
        """uvicorn re-raises a caught SIGTERM once it has stopped, which would end the process
        before the controller kills the turns' process groups; we watch signals ourselves.
        At shutdown the event streams are ended first (``on_shutdown``): uvicorn cancels a
        response still open after its grace, and logs that as a traceback."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def shutdown(self, sockets: Any = None) -> None:
            on_shutdown()
            await super().shutdown(sockets=sockets)

    return QuietServer(config)


async def _exit_on_signal(handle: Any) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            handle.should_exit = True


def approval_queue(controller: Controller) -> PendingApprovals | None:
    """The queue the approve endpoint answers: the controller's own handler when it is one,
    installed when the controller has none (a host's own handler is left alone: ``None``)."""
    handler = controller.approvals.handler
    if handler is None:
        handler = controller.approvals.handler = PendingApprovals()
    return handler if isinstance(handler, PendingApprovals) else None


async def serve(
    controller: Controller,
    *,
    host: str,
    port: int,
    token: str,
    ready: Callable[[str, Any], None] | None = None,
    handle_signals: bool = False,
    max_body: int = DEFAULT_MAX_BODY,
    access_log: bool = False,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> None:
    """Serve until told to exit (SIGINT/SIGTERM with ``handle_signals``, or ``should_exit`` on
    the handle passed to ``ready(url, handle)``); running turns are then cancelled (recorded as
    ``turn.cancelled``) and the controller, left by the caller, kills their processes.
    ``max_body``: the largest request body read, in bytes (a larger one is a 413);
    ``access_log``: a line per request on stderr (``harness serve`` without ``--quiet``);
    ``read_timeout``: seconds a request's headers, and then its body, may take to arrive (408
    past them); ``max_connections``: connections held at once (503 past them, see
    :mod:`.deadlines`)."""
    import uvicorn

    from .deadlines import protocol_class

    sock = bind(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    async with anyio.create_task_group() as task_group:
        state = Server(
            controller=controller,
            task_group=task_group,
            token=token,
            approvals=approval_queue(controller),
            max_body=max_body,
            read_timeout=read_timeout,
        )
        if state.approvals is not None:  # a request waiting for the viewer wakes its followers
            state.approvals.on_request = lambda request: state.hub.notify(request.session_id or "")
        config = uvicorn.Config(
            create_app(state, host, access_log=access_log),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            http=protocol_class(read_timeout, max_connections),
        )
        handle = _uvicorn_server(config, state.hub.close)
        if handle_signals:
            task_group.start_soon(_exit_on_signal, handle)
        if ready is not None:
            ready(f"http://{shown}:{bound[1]}/", handle)
        try:
            await handle.serve(sockets=[sock])
        finally:
            task_group.cancel_scope.cancel()
            sock.close()
