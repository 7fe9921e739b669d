"""Reference pages generated from the code, so they cannot drift from it.

- :func:`hook_reference`: every hookspec of ``harness_hookspecs.specs``, its signature, whether
  it is ``firstresult``, and its docstring (a hookspec without one fails ``tests/docs``);
- :func:`cli_reference`: ``harness --help`` and every subcommand's help, from the real parser;
- :func:`api_reference`: the public methods of ``Controller``, ``Turn``, ``TurnResult`` and
  ``Plugins`` with their docstrings.

Used by ``docs/_gen/mkdocs_hooks.py`` (at ``mkdocs build``) and by the docs tests.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

SPEC_MARKER = "harness_core_spec"


def hookspecs() -> list[tuple[str, str, Any]]:
    """``(module short name, hook name, function)`` for every hookspec, in module order."""
    import harness_hookspecs.specs as specs

    found = []
    for module in specs.ALL:
        for name, function in vars(module).items():
            if callable(function) and hasattr(function, SPEC_MARKER):
                found.append((module.__name__.rsplit(".", 1)[1], name, function))
    return found


TITLES = {"observers": "Observer", "credentials": "Credential"}


def _signature(function: Any) -> str:
    text = f"{function.__name__}{inspect.signature(function)}".replace("'", "")
    return re.sub(r"\b(?:harness_hookspecs|collections\.abc|typing)\.(?:\w+\.)*", "", text)


def markdown(doc: str | None) -> str:
    """A docstring as Markdown: Sphinx roles and double backticks become inline code."""
    text = re.sub(r":\w+:`~?([\w.]+)`", lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", doc or "")
    return text.replace("``", "`")


def hook_reference() -> str:
    lines = [
        "# Hook reference",
        "",
        "Generated from the docstrings of `harness_hookspecs.specs` (the contract). Markers:",
        '`hookspec = pluggy.HookspecMarker("harness_core")`, `hookimpl = '
        'pluggy.HookimplMarker("harness_core")`; entry-point group `harness_core`.',
        "",
    ]
    module_docs: dict[str, str] = {}
    import harness_hookspecs.specs as specs

    for module in specs.ALL:
        module_docs[module.__name__.rsplit(".", 1)[1]] = inspect.getdoc(module) or ""
    current = None
    for module_name, name, function in hookspecs():
        if module_name != current:
            current = module_name
            title = TITLES.get(module_name, module_name.capitalize())
            lines += [f"## {title} hooks", "", markdown(module_docs[module_name]), ""]
        options = getattr(function, SPEC_MARKER)
        flags = [key for key in ("firstresult", "historic") if options.get(key)]
        lines += [
            f"### `{name}`",
            "",
            "```python",
            _signature(function),
            "```",
            "",
            f"*{', '.join(flags) if flags else 'every implementation answers'}*",
            "",
            markdown(inspect.getdoc(function)),
            "",
        ]
    return "\n".join(lines)


def cli_reference() -> str:
    import argparse

    from harness_core.cli import build_parser

    parser = build_parser()
    lines = [
        "# CLI reference",
        "",
        "Generated from the `harness` command's own parser (`harness_core.cli`).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines += [
                    f"## `harness {name}`",
                    "",
                    "```text",
                    sub.format_help().rstrip(),
                    "```",
                    "",
                ]
    return "\n".join(lines)


def _members(cls: Any) -> list[tuple[str, Any]]:
    members = []
    for name, value in vars(cls).items():
        if name.startswith("_") and name not in ("__aenter__",):
            continue
        if isinstance(value, property) or inspect.isfunction(value):
            members.append((name, value))
    return members


def api_reference() -> str:
    from harness_core.controller import Controller
    from harness_core.plugins import Plugins, get_plugins, plugins_from
    from harness_core.turn import Turn, TurnResult

    lines = [
        "# Python API reference",
        "",
        "Generated from the docstrings of the runtime's public classes. The guides explain how "
        "they fit together: [host applications](../host-apps.md), "
        "[plugin authors](../plugin-authors.md).",
        "",
    ]
    for obj in (Controller, Turn, TurnResult, Plugins):
        lines += [f"## `{obj.__module__}.{obj.__name__}`", "", markdown(inspect.getdoc(obj)), ""]
        for name, member in _members(obj):
            if isinstance(member, property):
                doc = markdown(inspect.getdoc(member))
                lines += [f"### `{obj.__name__}.{name}` (property)", "", doc, ""]
                continue
            signature = str(inspect.signature(member)).replace("harness_hookspecs.", "")
            signature = signature.replace("'", "")
            lines += [
                f"### `{obj.__name__}.{name}`",
                "",
                "```python",
                f"{'async ' if inspect.iscoroutinefunction(member) else ''}def {name}{signature}",
                "```",
                "",
                markdown(inspect.getdoc(member)),
                "",
            ]
    for function in (get_plugins, plugins_from):
        lines += [
            f"## `harness_core.{function.__name__}`",
            "",
            "```python",
            f"def {function.__name__}{inspect.signature(function)}",
            "```",
            "",
            markdown(inspect.getdoc(function)),
            "",
        ]
    return "\n".join(lines)


PAGES = {
    "reference/hooks.md": hook_reference,
    "reference/cli.md": cli_reference,
    "reference/python-api.md": api_reference,
}
