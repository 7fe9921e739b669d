"""The plugin manager: entry points, explicit registration, and what each plugin provides.

(This module was ``harness_core.plugins``, which still re-exports its names.)

Entry points in the ``harness_core`` group are loaded once, lazily. ``HARNESS_CORE_PLUGINS``
(a comma list of entry-point names; empty means none) limits what loads, as ``LLM_LOAD_PLUGINS``
does for llm. A plugin that fails to import or registers badly is recorded in
:attr:`Plugins.broken` by name with a one-line cause; the host carries on without it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from types import MappingProxyType
from typing import Any

import harness_hookspecs.specs as _specs
import pluggy
from attrs import define, field, frozen
from harness_hookspecs import (
    ENTRY_POINT_GROUP,
    PROJECT_NAME,
    CredentialResolver,
    HarnessAdapter,
    HarnessDescriptor,
    HostTool,
    SandboxProvider,
    hookimpl,
)
from harness_hookspecs.values import Value

from .dispatch import DispatchHooks
from .registry import LedgerFactory, Registration, Registries, Registry, as_adapter

ENV_PLUGINS = "HARNESS_CORE_PLUGINS"
#: The pluggy name of the runtime's own :class:`~harness_core.dispatch.DispatchHooks`.
CORE_PLUGIN_NAME = "harness_core.dispatch"


@frozen(repr=False, eq=False)
class BrokenPlugin(Value):
    name: str
    error: str


@frozen(repr=False, eq=False)
class EntryPointRef(Value):
    """One ``harness_core`` entry point: what ``importlib.metadata`` says about it, kept so a
    cached listing can load plugins without scanning every installed distribution again."""

    name: str
    value: str
    distribution: str | None = None
    version: str | None = None

    def load(self) -> Any:
        """Import the module and walk the attribute path (as ``EntryPoint.load`` does)."""
        match = _ENTRY_POINT_VALUE.match(self.value)
        if match is None:
            raise ValueError(f"malformed entry point {self.value!r}")
        obj = import_module(match.group("module"))
        for part in (match.group("attr") or "").split("."):
            if part:
                obj = getattr(obj, part)
        return obj


#: ``module.path[:attr.path] [extras]`` (importlib.metadata's EntryPoint.pattern).
_ENTRY_POINT_VALUE = re.compile(
    r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
)


def installed_entry_points() -> list[EntryPointRef]:
    """Every installed ``harness_core`` entry point, sorted by name (``sys.path`` order within
    a name, so the first one found wins as before)."""
    from importlib import metadata

    refs = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        refs.append(
            EntryPointRef(
                ep.name,
                ep.value,
                dist.metadata["Name"] if dist is not None else None,
                dist.version if dist is not None else None,
            )
        )
    return refs


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

    def __init__(self, adapter: HarnessAdapter) -> None:
        self.adapter = adapter

    @hookimpl
    def register_harnesses(self, register: Callable[[Any], None]) -> None:
        register(self.adapter)


def _one_line(error: BaseException) -> str:
    text = (
        f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
    )
    return text[:200]


class Plugins:
    """A pluggy manager plus the registries the registration hooks fill."""

    def __init__(
        self,
        *,
        load_entry_points: bool = True,
        env: Mapping[str, str] | None = None,
        only: Iterable[str] | None = None,
        entry_points: Iterable[EntryPointRef] | None = None,
    ):
        self.pm = pluggy.PluginManager(PROJECT_NAME)
        for module in _specs.ALL:
            self.pm.add_hookspecs(module)
        self.registries = Registries()
        self.broken: list[BrokenPlugin] = []
        self._info: dict[str, PluginInfo] = {}
        self._env = os.environ if env is None else env
        #: Entry-point names to load (within HARNESS_CORE_PLUGINS); ``None``: all of them.
        self._only = None if only is None else frozenset(only)
        self.pm.register(DispatchHooks(self.registries), name=CORE_PLUGIN_NAME)
        if load_entry_points:
            self.load_entry_points(entry_points)

    # -- what is registered (read-only views) ------------------------------------------------

    @property
    def harnesses(self) -> Registry[HarnessAdapter]:
        return self.registries.harnesses

    @property
    def sandbox_providers(self) -> Registry[SandboxProvider]:
        return self.registries.sandbox_providers

    @property
    def credential_resolvers(self) -> Registry[CredentialResolver]:
        return self.registries.credential_resolvers

    @property
    def ledger_schemes(self) -> Registry[LedgerFactory]:
        return self.registries.ledger_schemes

    @property
    def host_tools(self) -> Registry[HostTool]:
        return self.registries.host_tools

    @property
    def info(self) -> Mapping[str, PluginInfo]:
        """Each registered plugin by name: where it comes from and what it provides."""
        return MappingProxyType(self._info)

    @property
    def hook(self) -> Any:
        """The hook relay: ``plugins.hook.harness_describe(harness=...)`` calls every plugin."""
        return self.pm.hook

    def is_registered(self, name: str) -> bool:
        return self.pm.get_plugin(name) is not None

    # -- loading -----------------------------------------------------------------------------

    def allowed(self) -> set[str] | None:
        raw = self._env.get(ENV_PLUGINS)
        if raw is None:
            return None
        return {name.strip() for name in raw.split(",") if name.strip()}

    def load_entry_points(self, entry_points: Iterable[EntryPointRef] | None = None) -> None:
        """Load the installed entry points (or ``entry_points``, as a cached listing saw them)."""
        allowed = self.allowed()
        refs = installed_entry_points() if entry_points is None else entry_points
        for ep in refs:
            if allowed is not None and ep.name not in allowed:
                continue
            if self._only is not None and ep.name not in self._only:
                continue
            if ep.name in self._info or any(b.name == ep.name for b in self.broken):
                continue  # the same plugin seen twice on sys.path
            try:
                obj = ep.load()
            except Exception as error:
                self.broken.append(BrokenPlugin(ep.name, f"import failed: {_one_line(error)}"))
                continue
            self.register(obj, name=ep.name, distribution=ep.distribution, version=ep.version)

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
        adapter = as_adapter(obj, name)
        if adapter is not None and not self._has_hookimpls(obj):
            plugin = _AdapterPlugin(adapter)
            name = name or adapter.name
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
        if not self._collect(plugin, info):
            self.pm.unregister(plugin)
            return False
        self._info[name] = info
        return True

    def unregister(self, name: str) -> bool:
        """Remove the plugin registered as ``name`` and everything it registered.

        Returns ``False`` when no plugin of that name is registered. The runtime's own dispatch
        hooks cannot be unregistered.
        """
        if name == CORE_PLUGIN_NAME or self.pm.get_plugin(name) is None:
            return False
        self.pm.unregister(name=name)
        self._info.pop(name, None)
        self.registries.remove_plugin(name)
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
        registration = Registration(self.registries, info.name)
        try:
            for hook_name, register in registration.hooks():
                for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                    if impl.plugin is plugin:
                        impl.function(register=register)
        except Exception as error:
            self.broken.append(BrokenPlugin(info.name, f"registration failed: {_one_line(error)}"))
            return False
        registration.apply()
        info.harnesses = self.harnesses.owned_by(info.name)
        info.sandbox_providers = self.sandbox_providers.owned_by(info.name)
        info.credential_resolvers = self.credential_resolvers.owned_by(info.name)
        info.ledger_schemes = self.ledger_schemes.owned_by(info.name)
        return True

    # -- lookups -----------------------------------------------------------------------------

    def adapter(self, name: str) -> HarnessAdapter:
        """The adapter registered as ``name``; ``invalid-request`` if there is none."""
        return self.registries.adapter(name)

    def describe(self, name: str) -> HarnessDescriptor:
        """The descriptor of harness ``name``, through the hooks (plugins may answer first)."""
        descriptor: HarnessDescriptor = self.pm.hook.harness_describe(harness=name)
        return descriptor

    def harness_names(self) -> list[str]:
        return sorted(self.harnesses)


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
