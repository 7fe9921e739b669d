"""The ASGI application and the uvicorn server that runs it over one controller."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..controller import Controller
from . import api, viewer
from .runner import Server

STATIC = Path(__file__).with_name("static")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def allowed_hosts(host: str) -> list[str]:
    """Host headers to accept: on loopback only loopback names (a DNS-rebinding page cannot
    reach the API under its own name); a host bound elsewhere was chosen on purpose."""
    if host in LOOPBACK:
        return ["127.0.0.1", "localhost", "[::1]"]
    return ["*"]


def create_app(server: Server, host: str = "127.0.0.1") -> Starlette:
    app = Starlette(
        routes=[
            *api.routes(),
            *viewer.routes(),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))],
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


async def serve(
    controller: Controller,
    *,
    host: str,
    port: int,
    token: str,
    ready: Callable[[str, Any], None] | None = None,
) -> None:
    """Serve until uvicorn is told to exit (a signal, or ``should_exit`` on the handle passed to
    ``ready(url, handle)``); turns still running are then cancelled and recorded as such."""
    import uvicorn

    sock = bind(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    async with anyio.create_task_group() as task_group:
        state = Server(controller=controller, task_group=task_group, token=token)
        config = uvicorn.Config(
            create_app(state, host),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        handle = uvicorn.Server(config)
        if ready is not None:
            ready(f"http://{shown}:{bound[1]}/", handle)
        try:
            await handle.serve(sockets=[sock])
        finally:
            task_group.cancel_scope.cancel()
            sock.close()
