"""What the plugins provide, by kind and by name: typed registries and the registration facade.

A plugin's registration hooks (``register_harnesses`` ...) are called with ``register`` callables
that a :class:`Registration` hands out, one per kind (as tox 4's ``ToxEnvRegister`` does): each
checks what it is given, and the plugin's whole registration is applied at once, or - if any
call was bad - not at all. Every registered object remembers the plugin that registered it, so
unregistering a plugin takes back everything it provided.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from harness_hookspecs import (
    CredentialResolver,
    HarnessAdapter,
    HarnessError,
    HostTool,
    LedgerStore,
    SandboxProvider,
)
from harness_hookspecs.bounds import is_name

#: ``function_harness.ADAPTER_ATTRIBUTE`` (not imported: a run of a CLI adapter never needs
#: that module; the function harness itself is imported when a bare function is registered)
ADAPTER_ATTRIBUTE = "__harness_adapter__"

T = TypeVar("T")

#: ``factory(url)`` opens a ledger store for URLs of its scheme.
LedgerFactory = Callable[[str], LedgerStore]


def as_adapter(obj: Any, default_name: str | None = None) -> HarnessAdapter | None:
    """Return a harness adapter for ``obj`` (an adapter, a decorated or a bare async function)."""
    adapter = getattr(obj, ADAPTER_ATTRIBUTE, None)
    if isinstance(adapter, HarnessAdapter):
        return adapter
    if isinstance(obj, HarnessAdapter) and not inspect.isclass(obj):
        return obj
    if default_name and (inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj)):
        from .function_harness import FunctionHarness

        return FunctionHarness(default_name, obj)
    return None


class Registry(Mapping[str, T], Generic[T]):
    """Named objects of one kind (read-only for everyone but :class:`Registration`)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._owners: dict[str, str] = {}

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}: {', '.join(self._items) or 'none'}>"

    def owner(self, name: str) -> str | None:
        """The plugin that registered ``name``."""
        return self._owners.get(name)

    def owned_by(self, plugin: str) -> list[str]:
        """The names ``plugin`` registered, in registration order."""
        return [name for name, owner in self._owners.items() if owner == plugin]

    def _add(self, name: str, value: T, plugin: str) -> None:
        self._items[name] = value
        self._owners[name] = plugin

    def _remove_plugin(self, plugin: str) -> None:
        for name in self.owned_by(plugin):
            del self._items[name]
            del self._owners[name]


class Registries:
    """Every registry, and the typed lookups the runtime dispatches through."""

    def __init__(self) -> None:
        self.harnesses: Registry[HarnessAdapter] = Registry("harness")
        self.sandbox_providers: Registry[SandboxProvider] = Registry("sandbox provider")
        self.credential_resolvers: Registry[CredentialResolver] = Registry("credential resolver")
        self.ledger_schemes: Registry[LedgerFactory] = Registry("ledger store")
        self.host_tools: Registry[HostTool] = Registry("host tool")

    def all(self) -> tuple[Registry[Any], ...]:
        return (
            self.harnesses,
            self.sandbox_providers,
            self.credential_resolvers,
            self.ledger_schemes,
            self.host_tools,
        )

    def adapter(self, name: str) -> HarnessAdapter:
        """The adapter registered as ``name``; ``invalid-request`` if there is none."""
        try:
            return self.harnesses[name]
        except KeyError:
            raise HarnessError("invalid-request", f"unknown harness {name!r}"[:240]) from None

    def remove_plugin(self, plugin: str) -> None:
        """Take back everything ``plugin`` registered."""
        for registry in self.all():
            registry._remove_plugin(plugin)


class Registration:
    """One plugin's registration: typed ``register`` callables, applied together by :meth:`apply`.

    A bad call raises ``ValueError`` (the plugin is then reported broken and nothing it
    registered is kept).
    """

    def __init__(self, registries: Registries, plugin: str) -> None:
        self.registries = registries
        self.plugin = plugin
        self._staged: list[tuple[Registry[Any], str, Any]] = []

    def harness(self, item: Any) -> None:
        """``register_harnesses``: an adapter or an ``@harness`` function."""
        adapter = as_adapter(item)
        if adapter is None:
            raise ValueError("not a harness")
        self._stage(self.registries.harnesses, adapter.name, adapter)

    def sandbox_provider(self, item: Any) -> None:
        """``register_sandbox_providers``: a :class:`SandboxProvider`."""
        if not isinstance(item, SandboxProvider):
            raise ValueError("not a sandbox provider")
        self._stage(self.registries.sandbox_providers, item.name, item)

    def credential_resolver(self, item: Any) -> None:
        """``register_credential_resolvers``: a :class:`CredentialResolver`."""
        if not isinstance(item, CredentialResolver):
            raise ValueError("not a credential resolver")
        self._stage(self.registries.credential_resolvers, item.name, item)

    def ledger_store(self, scheme: Any, factory: Any = None) -> None:
        """``register_ledger_stores``: ``register(scheme, factory)``."""
        if not isinstance(scheme, str) or not scheme.isidentifier() or not callable(factory):
            raise ValueError("register(scheme, factory) needs a name and a callable")
        self._stage(self.registries.ledger_schemes, scheme, factory, check_name=False)

    def host_tool(self, item: Any) -> None:
        """``register_host_tools``: a :class:`HostTool`."""
        if not isinstance(item, HostTool):
            raise ValueError("not a host tool")
        self._stage(self.registries.host_tools, item.name, item, check_name=False)

    def _stage(
        self, registry: Registry[Any], name: Any, value: Any, *, check_name: bool = True
    ) -> None:
        if check_name and not is_name(name):
            raise ValueError(f"invalid {registry.kind} name")
        staged = any(r is registry and n == name for r, n, _ in self._staged)
        if name in registry or staged:
            raise ValueError(f"duplicate {registry.kind} {name!r}")
        self._staged.append((registry, name, value))

    def hooks(self) -> tuple[tuple[str, Callable[..., None]], ...]:
        """Each registration hook's name and the ``register`` callable it is called with."""
        return (
            ("register_harnesses", self.harness),
            ("register_sandbox_providers", self.sandbox_provider),
            ("register_credential_resolvers", self.credential_resolver),
            ("register_ledger_stores", self.ledger_store),
            ("register_host_tools", self.host_tool),
        )

    def apply(self) -> None:
        for registry, name, value in self._staged:
            registry._add(name, value, self.plugin)
