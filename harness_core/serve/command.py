"""``harness serve``: arguments and entry. Imports nothing heavy until the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .limits import DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT

DEFAULT_PORT = 8421


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)"
    )
    parser.add_argument(
        "--ledger", help="ledger URL (default: $HARNESS_LEDGER or sqlite:.harness/ledger.sqlite)"
    )
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        help="read the bearer token from this environment variable (default: a new random one)",
    )
    parser.add_argument("--timeout", type=_positive, help="default turn deadline in seconds")
    parser.add_argument(
        "--max-body",
        type=_at_least_one,
        metavar="BYTES",
        default=DEFAULT_MAX_BODY,
        help=f"largest request body accepted, in bytes (default {DEFAULT_MAX_BODY}: 413 past it)",
    )
    parser.add_argument(
        "--read-timeout",
        type=_positive,
        metavar="SECONDS",
        default=DEFAULT_READ_TIMEOUT,
        help=f"seconds a request's headers, then its body, may take to arrive "
        f"(default {DEFAULT_READ_TIMEOUT:g}: 408 past them)",
    )
    parser.add_argument(
        "--max-connections",
        type=_at_least_one,
        metavar="N",
        default=DEFAULT_MAX_CONNECTIONS,
        help=f"connections held at once, event streams included "
        f"(default {DEFAULT_MAX_CONNECTIONS}: 503 past them)",
    )
    parser.add_argument(
        "--max-backlog",
        type=_at_least_one,
        metavar="EVENTS",
        help="events all turns together may record ahead of the ledger's commits; past them "
        "each turn waits for the ledger (default: no bound; see Controller(max_backlog=...))",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no request log (by default a line per request on stderr)",
    )


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError("a port is an integer from 0 to 65535")
    return int(text)


def _positive(text: str) -> float:
    from ..number_checks import positive_number

    try:
        return positive_number(text, seconds=True)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _at_least_one(text: str) -> int:
    from ..number_checks import whole_number

    try:
        return whole_number(text, 1)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def controller_from(args: argparse.Namespace) -> Any:
    """The :class:`~harness_core.Controller` ``harness serve`` runs turns on, as its options
    say (unless a plugin's serve option hands over another)."""
    from ..controller import Controller

    return Controller(
        ledger=args.ledger,
        turn_timeout=args.timeout,
        max_backlog=args.max_backlog,
    )


def main(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        sys.stderr.write(
            "harness: error: invalid-request: harness serve needs the serve extra "
            "(pip install 'harnessplane[serve]')\n"
        )
        return 2
    import anyio

    from .app import serve
    from .auth import new_token, token_from_env

    token = token_from_env(args.token_env) if args.token_env else new_token()

    def ready(url: str, _handle: Any) -> None:
        print(f"harness serve: listening on {url}", flush=True)
        if args.token_env:
            print(f"bearer token for changes: from ${args.token_env}", flush=True)
            print(f"viewer: {url}  (add #token=<token> to act from the page)", flush=True)
        else:
            print(f"bearer token for changes: {token}", flush=True)
            print(f"viewer (actions enabled): {url}#token={token}", flush=True)

    # a plugin's serve option may give another controller (the Temporal executor's --temporal)
    served = next(
        (c for c in (hand_off(args) for hand_off in getattr(args, "serve_hand_offs", ())) if c),
        None,
    )

    async def run() -> None:
        chosen = served or controller_from(args)
        async with chosen as controller:
            await serve(
                controller,
                host=args.host,
                port=args.port,
                token=token,
                ready=ready,
                handle_signals=True,
                max_body=args.max_body,
                access_log=not args.quiet,
                read_timeout=args.read_timeout,
                max_connections=args.max_connections,
            )

    try:
        anyio.run(run)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        sys.stderr.write(
            f"harness: error: invalid-request: cannot listen on {args.host}:{args.port} ({reason})\n"
        )
        return 2
    return 0
