"""A bounded reachability probe of the model endpoint, before a CLI is spawned.

Some CLIs take a minute or more to give up on an unreachable endpoint (or never do): a TCP
connect of a few seconds turns that into ``provider-unavailable`` at once.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
from harness_hookspecs import SessionContext, TurnFailed

PREFLIGHT_TIMEOUT = 3.0


async def endpoint_reachable(
    base_url: str, deadline: float | None, timeout: float = PREFLIGHT_TIMEOUT
) -> bool:
    """A TCP connect to ``base_url``'s host and port, bounded by ``timeout`` and ``deadline``."""
    parts = urlsplit(base_url)
    host = parts.hostname
    if not host:
        return True
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if deadline is not None:
        timeout = max(0.1, min(timeout, deadline - anyio.current_time()))
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
    except (OSError, TimeoutError):
        return False
    await stream.aclose()
    return True


async def preflight(context: SessionContext, base_url: str | None) -> TurnFailed | None:
    """The turn's failure when ``base_url`` is unreachable (config ``preflight: false`` skips)."""
    if not base_url or not context.config.get("preflight", True):
        return None
    if await endpoint_reachable(base_url, context.deadline):
        return None
    return TurnFailed(reason="provider-unavailable", hint="the model endpoint is unreachable")
