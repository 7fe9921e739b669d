"""Calling a firstresult lifecycle hook straight into the runtime's own implementation when
nothing else answers it.

Most sessions have no plugin that answers (or wraps) ``harness_describe``, ``sandbox_provision``,
``harness_open_session``, ``harness_run_turn`` and the rest: the runtime's
:class:`~harness_core.dispatch.DispatchHooks` is their only implementation. Calling it directly
returns what pluggy would return then, without pluggy's per-call bookkeeping (~4 us a call,
several calls a session). Any other implementation - a plugin answering first, a wrapper - and
the call goes through pluggy as before; that is checked on every call, so a plugin registered
later is honoured.
"""

from __future__ import annotations

from typing import Any


class HookCalls:
    """``calls("harness_run_turn", request=..., context=...)``: a firstresult hook's result."""

    __slots__ = ("_core", "_entries", "_hook")

    def __init__(self, hook: Any, core: object) -> None:
        self._hook = hook
        self._core = core
        self._entries: dict[str, tuple[Any, list[Any]]] = {}

    def implementations(self, name: str) -> list[Any]:
        """Hook ``name``'s implementations: pluggy's own list, which it changes in place when
        a plugin is registered or removed (read it, never change it; ``get_hookimpls()``
        copies it on every call)."""
        return self._entry(name)[1]

    def _entry(self, name: str) -> tuple[Any, list[Any]]:
        entry = self._entries.get(name)
        if entry is None:
            caller = getattr(self._hook, name)
            implementations = getattr(caller, "_hookimpls", None)
            if not isinstance(implementations, list):  # another pluggy: ask it every time
                return caller, caller.get_hookimpls()
            entry = self._entries[name] = (caller, implementations)
        return entry

    def sole(self, name: str) -> Any:
        """The core's implementation of hook ``name`` if it is the only one, else ``None``."""
        implementations = self._entry(name)[1]
        if len(implementations) == 1 and implementations[0].plugin is self._core:
            return implementations[0].function
        return None

    def __call__(self, name: str, **kwargs: Any) -> Any:
        caller, implementations = self._entry(name)
        if len(implementations) == 1 and implementations[0].plugin is self._core:
            return implementations[0].function(**kwargs)
        return caller(**kwargs)
