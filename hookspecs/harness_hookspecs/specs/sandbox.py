"""Sandbox hooks: where a session's processes run."""

from __future__ import annotations

from collections.abc import Awaitable

from ..markers import hookspec
from ..models import SandboxHandle, SandboxRequest


@hookspec(firstresult=True)
def sandbox_provision(request: SandboxRequest) -> Awaitable[SandboxHandle] | None:
    """Provision the sandbox for a session.

    Called by the controller when a session opens or resumes, before the adapter is called. The
    default implementation dispatches to the provider named in ``request.spec.provider`` (or runs
    processes directly in the workspace when none is named). Returns an awaitable of a
    :class:`SandboxHandle`; raises ``HarnessError("sandbox-failed")`` or ``("policy-refused")``.
    """


@hookspec(firstresult=True)
def sandbox_finalize(handle: SandboxHandle, outcome: str) -> Awaitable[None] | None:
    """Finalize a sandbox with the session's outcome (``success``, ``failure`` or ``cancelled``).

    Called by the controller once, when the session closes. Returns an awaitable of ``None``.
    """
