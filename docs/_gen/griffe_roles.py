"""Griffe extensions for the API reference (see mkdocs.yml).

- :class:`SphinxRolesAsCode`: Sphinx roles in docstrings (``:func:`name```, the style the code's
  docstrings use) become Markdown inline code, as the hook reference renders them;
- :class:`CommentDocstrings`: an attribute documented by ``#:`` comment lines right above it
  (Sphinx autodoc's convention, which the code uses) gets them as its docstring;
- :class:`AttrsInit`: an attrs class gets the ``__init__`` attrs generates for it (griffe reads
  the source, where that method does not exist), so the page shows how to construct it, with
  each field's docstring as its parameter's.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

_ROLE = re.compile(r":\w+:`~?([\w.]+)(?:\(\))?`")


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(
                lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", obj.docstring.value
            )


class CommentDocstrings(griffe.Extension):
    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        if attr.docstring is not None or not attr.lineno:
            return
        lines = attr.module.lines
        comment: list[str] = []
        index = attr.lineno - 2
        while 0 <= index < len(lines) and lines[index].strip().startswith("#:"):
            comment.insert(0, lines[index].strip()[2:].strip())
            index -= 1
        if comment:
            text = " ".join(comment)
            attr.docstring = griffe.Docstring(
                text[:1].upper() + text[1:], lineno=index + 2, parent=attr
            )


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword,
}


def _runtime(cls: griffe.Class) -> Any:
    try:
        value: Any = importlib.import_module(cls.module.path)
    except Exception:  # an optional dependency missing: no signature, the page still builds
        return None
    for part in cls.path[len(cls.module.path) + 1 :].split("."):
        value = getattr(value, part, None)
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return getattr(value, "__name__", None) or repr(value)


class AttrsInit(griffe.Extension):
    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if "__init__" in cls.members:
            return
        runtime = _runtime(cls)
        if runtime is None or not hasattr(runtime, "__attrs_attrs__"):
            return
        try:
            signature = inspect.signature(runtime)
        except (TypeError, ValueError):
            return
        parameters = [griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)]
        for parameter in signature.parameters.values():
            field = cls.members.get(parameter.name) or cls.members.get(f"_{parameter.name}")
            empty = parameter.empty
            parameters.append(
                griffe.Parameter(
                    parameter.name,
                    annotation=None
                    if parameter.annotation is empty
                    else _text(parameter.annotation),
                    kind=_KINDS[parameter.kind],
                    default=None if parameter.default is empty else repr(parameter.default),
                    docstring=field.docstring if field is not None else None,
                )
            )
        init = griffe.Function(
            "__init__",
            lineno=cls.lineno or 0,
            endlineno=cls.lineno or 0,
            parent=cls,
            parameters=griffe.Parameters(*parameters),
            returns="None",
        )
        cls.set_member("__init__", init)
        cls.labels.add("attrs")
