"""Registration hooks: how a plugin tells the runtime what it provides.

Each is called once, when the runtime's plugin manager is first used, with a ``register``
callable. They are not ``firstresult``: every plugin's implementation runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..markers import hookspec


@hookspec
def register_harnesses(register: Callable[[Any], None]) -> None:
    """Register harness adapters.

    Called once by the runtime when plugins load. Call ``register(adapter)`` for each adapter - an
    object satisfying :class:`~harness_hookspecs.protocols.HarnessAdapter`, or a function decorated
    with ``@harness("name")``. The adapter's ``name`` (its descriptor's ``provider``) must be unique;
    a duplicate is reported as a broken plugin. Returns nothing.
    """


@hookspec
def register_sandbox_providers(register: Callable[[Any], None]) -> None:
    """Register sandbox providers.

    Called once when plugins load. Call ``register(provider)`` with an object satisfying
    :class:`~harness_hookspecs.protocols.SandboxProvider`; sessions choose one by ``name`` in their
    :class:`~harness_hookspecs.models.SandboxSpec`. Returns nothing.
    """


@hookspec
def register_credential_resolvers(register: Callable[[Any], None]) -> None:
    """Register credential resolvers.

    Called once when plugins load. Call ``register(resolver)`` with an object satisfying
    :class:`~harness_hookspecs.protocols.CredentialResolver`. Every registered resolver is asked at
    session open; the runtime picks agent-level grants before vendor fallbacks. Returns nothing.
    """


@hookspec
def register_ledger_stores(register: Callable[[str, Callable[[str], Any]], None]) -> None:
    """Register ledger store kinds.

    Called once when plugins load. Call ``register(scheme, factory)``: ``factory(url)`` returns a
    :class:`~harness_hookspecs.protocols.LedgerStore` for ledger URLs ``scheme:...``. The runtime
    registers ``memory``, ``jsonl`` and ``sqlite`` itself. Returns nothing.
    """


@hookspec
def register_host_tools(register: Callable[[Any], None]) -> None:
    """Register host tools: read-only functions the harness may call during a turn.

    Called once when plugins load. Call ``register(tool)`` with a
    :class:`~harness_hookspecs.host_tools.HostTool` (name, description, input schema, async
    function). A session whose include/exclude patterns select at least one tool gets a loopback
    MCP bridge (the ``harnessplane-mcp-bridge`` distribution) with a per-turn read-only token, and
    its adapter points the CLI at it. Names must be unique. Returns nothing.
    """
