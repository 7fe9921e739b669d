"""The base of the contract's attrs classes: ``__repr__``, ``__eq__`` and ``__hash__`` written
once, behaving as attrs' own.

attrs generates the source of those three methods for every class and compiles it when the class
is built, at import: across the contract's classes that was about a third of importing
``harness_hookspecs``, which every ``harness`` process pays before doing anything. A class
declared ``@frozen(repr=False, eq=False)`` on :class:`Value` gets the same answers from these
shared methods, driven by its ``__attrs_attrs__`` (a field's ``repr=False`` or ``eq=False`` is
honoured; a field's ``repr`` callable too). attrs still generates ``__init__`` (validators,
converters, defaults), and ``attrs.fields``/``evolve``/``asdict`` work as on any attrs class.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["Value"]

#: (field name, its ``repr``/``eq_key`` callable or ``True``/``None``) pairs
_Fields = tuple[tuple[str, Any], ...]
#: Per class: the fields shown, compared and hashed, read from ``__attrs_attrs__`` on first use
#: (weakly: a class made at run time, ``attrs.make_class``, may go away).
_LAYOUTS: weakref.WeakKeyDictionary[type, tuple[_Fields, _Fields, _Fields]] = (
    weakref.WeakKeyDictionary()
)
_repr_context = threading.local()


def _layout(cls: type) -> tuple[_Fields, _Fields, _Fields]:
    found = _LAYOUTS.get(cls)
    if found is None:
        fields = cls.__attrs_attrs__  # type: ignore[attr-defined]
        shown = tuple((a.name, a.repr) for a in fields if a.repr is not False)
        compared = tuple((a.name, a.eq_key) for a in fields if a.eq)
        hashed = tuple((a.name, a.eq_key) for a in fields if a.hash or (a.hash is None and a.eq))
        found = _LAYOUTS[cls] = (shown, compared, hashed)
    return found


def _value(instance: object, name: str, key: Any) -> Any:
    value = getattr(instance, name)
    return value if key is None else key(value)


class Value:
    """Shared value methods for attrs classes declared with ``repr=False, eq=False``: equal when
    of the same class with equal compared fields, hashable from those (the classes are frozen),
    shown as ``Name(field=value, ...)`` as attrs shows them (``...`` for a value met again
    inside itself)."""

    __slots__ = ()

    def __repr__(self) -> str:
        seen: set[int] | None = getattr(_repr_context, "seen", None)
        if seen is None:
            seen = _repr_context.seen = set()
        if id(self) in seen:
            return "..."
        seen.add(id(self))
        try:
            shown = _layout(type(self))[0]
            parts = ", ".join(
                f"{name}={show(getattr(self, name)) if callable(show) else repr(getattr(self, name))}"
                for name, show in shown
            )
            return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({parts})"
        finally:
            seen.discard(id(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        equal: Any = True
        for name, key in _layout(type(self))[1]:
            equal = _value(self, name, key) == _value(other, name, key)
            if not equal:
                return equal  # type: ignore[no-any-return]
        return equal  # type: ignore[no-any-return]

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        if equal is NotImplemented:
            return NotImplemented
        return not equal

    def __hash__(self) -> int:
        cls = type(self)
        hashed = _layout(cls)[2]
        return hash((cls.__module__, cls.__qualname__, *(_value(self, n, k) for n, k in hashed)))
