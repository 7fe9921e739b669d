"""``harness serve``: an HTTP API (JSON under ``/api/``, turns and live events as server-sent
events) and a session viewer at ``/``, over one :class:`~harness_core.Controller`.

Needs the ``serve`` extra (starlette + uvicorn). Binds 127.0.0.1 unless told otherwise; every
state-changing request needs the bearer token printed at start (or read from ``--token-env``).
"""

from __future__ import annotations
