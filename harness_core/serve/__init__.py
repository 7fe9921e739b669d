"""``harness serve``: an HTTP API (JSON under ``/api/``, turns and live events as server-sent
events) and a session viewer at ``/``, over one :class:`~harness_core.Controller`.

Needs the ``serve`` extra (starlette + uvicorn). Binds 127.0.0.1 unless told otherwise; every
state-changing request needs the bearer token printed at start (or read from ``--token-env``).
"""

from __future__ import annotations

#: The largest request body ``harness serve`` reads (a prompt of the contract's largest text,
#: 1 MiB characters, fits even as ``\uXXXX`` escapes); a larger one is refused with 413. Here,
#: not in ``command``: ``app`` and ``runner`` read it too, and ``command`` starts ``app``.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
