"""The plugin manager: entry points, explicit registration, and what each plugin provides.

Entry points in the ``harness_core`` group are loaded once, lazily. ``HARNESS_CORE_PLUGINS``
(a comma list of entry-point names; empty means none) limits what loads, as ``LLM_LOAD_PLUGINS``
does for llm. A plugin that fails to import or registers badly is recorded in
:attr:`Plugins.broken` by name with a one-line cause; the host carries on without it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from typing import Any

import harness_hookspecs.specs as _specs
import pluggy
from attrs import define, field, frozen
from harness_hookspecs import (
    ENTRY_POINT_GROUP,
    PROJECT_NAME,
    CredentialResolver,
    HarnessAdapter,
    HarnessError,
    LedgerStore,
    SandboxProvider,
    hookimpl,
)
from harness_hookspecs._bounds import is_name

from .function_harness import ADAPTER_ATTRIBUTE, FunctionHarness

ENV_PLUGINS = "HARNESS_CORE_PLUGINS"
CORE_PLUGIN_NAME = "harness_core.defaults"


@frozen
class BrokenPlugin:
    name: str
    error: str


@define
class PluginInfo:
    name: str
    distribution: str | None = None
    version: str | None = None
    harnesses: list[str] = field(factory=list)
    sandbox_providers: list[str] = field(factory=list)
    credential_resolvers: list[str] = field(factory=list)
    ledger_schemes: list[str] = field(factory=list)
    hooks: list[str] = field(factory=list)


class _AdapterPlugin:
    """Wraps a bare adapter (or decorated function) found at an entry point."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    @hookimpl
    def register_harnesses(self, register: Callable[[Any], None]) -> None:
        register(self.adapter)


def _one_line(error: BaseException) -> str:
    text = (
        f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
    )
    return text[:200]


def as_adapter(obj: Any, default_name: str | None = None) -> Any:
    """Return a harness adapter for ``obj`` (an adapter, a decorated or a bare async function)."""
    adapter = getattr(obj, ADAPTER_ATTRIBUTE, None)
    if adapter is not None:
        return adapter
    if isinstance(obj, HarnessAdapter) and not inspect.isclass(obj):
        return obj
    if default_name and (inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj)):
        return FunctionHarness(default_name, obj)
    return None


class Plugins:
    """A pluggy manager plus the registries the registration hooks fill."""

    def __init__(self, *, load_entry_points: bool = True, env: Mapping[str, str] | None = None):
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        for module in _specs.ALL:
            self.pm.add_hookspecs(module)
        self.harnesses: dict[str, Any] = {}
        self.sandbox_providers: dict[str, Any] = {}
        self.credential_resolvers: dict[str, Any] = {}
        self.ledger_schemes: dict[str, Callable[[str], LedgerStore]] = {}
        self.broken: list[BrokenPlugin] = []
        self.info: dict[str, PluginInfo] = {}
        self._env = os.environ if env is None else env
        from .defaults import CoreHooks

        self.pm.register(CoreHooks(self), name=CORE_PLUGIN_NAME)
        if load_entry_points:
            self.load_entry_points()

    # -- loading -----------------------------------------------------------------------------

    def allowed(self) -> set[str] | None:
        raw = self._env.get(ENV_PLUGINS)
        if raw is None:
            return None
        return {name.strip() for name in raw.split(",") if name.strip()}

    def load_entry_points(self) -> None:
        allowed = self.allowed()
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if allowed is not None and ep.name not in allowed:
                continue
            if ep.name in self.info or any(b.name == ep.name for b in self.broken):
                continue  # the same plugin seen twice on sys.path
            dist = getattr(ep, "dist", None)
            try:
                obj = ep.load()
            except Exception as error:
                self.broken.append(BrokenPlugin(ep.name, f"import failed: {_one_line(error)}"))
                continue
            self.register(
                obj,
                name=ep.name,
                distribution=dist.metadata["Name"] if dist is not None else None,
                version=dist.version if dist is not None else None,
            )

    def register(
        self,
        obj: Any,
        name: str | None = None,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> bool:
        """Register a plugin object: a module/object with hookimpls, an adapter, or a function.

        Returns ``False`` (and records it in :attr:`broken`) when it cannot be registered.
        """
        plugin = obj
        if as_adapter(obj, name) is not None and not self._has_hookimpls(obj):
            plugin = _AdapterPlugin(as_adapter(obj, name))
            name = name or plugin.adapter.name
        name = name or getattr(obj, "__name__", None) or repr(obj)
        if not self._has_hookimpls(plugin):
            self.broken.append(BrokenPlugin(name, "not a plugin: no hook implementations"))
            return False
        try:
            self.pm.register(plugin, name=name)
            unknown = [
                impl.function.__name__
                for hook_caller in self.pm.get_hookcallers(plugin) or []
                for impl in hook_caller.get_hookimpls()
                if impl.plugin is plugin and hook_caller.spec is None
            ]
            if unknown:
                self.pm.unregister(plugin)
                raise ValueError(f"unknown hook {unknown[0]}")
        except Exception as error:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self.broken.append(BrokenPlugin(name, f"registration failed: {_one_line(error)}"))
            return False
        info = PluginInfo(name=name, distribution=distribution, version=version)
        info.hooks = sorted(
            hc.name for hc in (self.pm.get_hookcallers(plugin) or []) if hc.spec is not None
        )
        self.info[name] = info
        if not self._collect(plugin, info):
            self.pm.unregister(plugin)
            del self.info[name]
            return False
        return True

    def _has_hookimpls(self, obj: Any) -> bool:
        for attr in dir(obj):
            try:
                value = getattr(obj, attr)
            except Exception:
                continue
            if hasattr(value, PROJECT_NAME + "_impl"):
                return True
        return False

    def _collect(self, plugin: Any, info: PluginInfo) -> bool:
        """Run this plugin's registration hooks, filling the registries; False if it broke."""
        staged: list[tuple[dict[str, Any], str, Any, list[str]]] = []

        def adder(registry: dict[str, Any], kind: str, names: list[str], check: Any) -> Any:
            def register(item: Any, factory: Any = None) -> None:
                if kind == "ledger store":
                    scheme, value = item, factory
                    if (
                        not isinstance(scheme, str)
                        or not scheme.isidentifier()
                        or not callable(value)
                    ):
                        raise ValueError("register(scheme, factory) needs a name and a callable")
                else:
                    value = as_adapter(item) if kind == "harness" else item
                    if value is None or not check(value):
                        raise ValueError(f"not a {kind}")
                    scheme = value.name
                    if not is_name(scheme):
                        raise ValueError(f"invalid {kind} name")
                if scheme in registry or any(s[1] == scheme and s[0] is registry for s in staged):
                    raise ValueError(f"duplicate {kind} {scheme!r}")
                staged.append((registry, scheme, value, names))

            return register

        checks = (
            ("register_harnesses", self.harnesses, "harness", info.harnesses, _is_adapter),
            (
                "register_sandbox_providers",
                self.sandbox_providers,
                "sandbox provider",
                info.sandbox_providers,
                lambda v: isinstance(v, SandboxProvider),
            ),
            (
                "register_credential_resolvers",
                self.credential_resolvers,
                "credential resolver",
                info.credential_resolvers,
                lambda v: isinstance(v, CredentialResolver),
            ),
            (
                "register_ledger_stores",
                self.ledger_schemes,
                "ledger store",
                info.ledger_schemes,
                None,
            ),
        )
        try:
            for hook_name, registry, kind, names, check in checks:
                for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                    if impl.plugin is plugin:
                        impl.function(register=adder(registry, kind, names, check))
        except Exception as error:
            self.broken.append(BrokenPlugin(info.name, f"registration failed: {_one_line(error)}"))
            return False
        for registry, key, value, names in staged:
            registry[key] = value
            names.append(key)
        return True

    # -- lookups -----------------------------------------------------------------------------

    def adapter(self, name: str) -> Any:
        try:
            return self.harnesses[name]
        except KeyError:
            raise HarnessError("invalid-request", f"unknown harness {name!r}"[:240]) from None

    def harness_names(self) -> list[str]:
        return sorted(self.harnesses)


def _is_adapter(value: Any) -> bool:
    return isinstance(value, HarnessAdapter)


_default: Plugins | None = None


def get_plugins() -> Plugins:
    """The process-wide plugin manager, loading entry points on first use."""
    global _default
    if _default is None:
        _default = Plugins()
    return _default


def reset_plugins() -> None:
    """Forget the process-wide manager (tests; after installing a plugin at runtime)."""
    global _default
    _default = None


def plugins_from(objs: Iterable[Any], *, entry_points: bool = False) -> Plugins:
    """A manager holding exactly ``objs`` (plus, optionally, the installed entry points)."""
    plugins = Plugins(load_entry_points=entry_points)
    for obj in objs:
        plugins.register(obj)
    return plugins
