"""Reference pages generated from the code, so they cannot drift from it.

- :func:`hook_reference`: every hookspec of ``harness_hookspecs.specs``, its signature, whether
  it is ``firstresult``, and its docstring (a hookspec without one fails ``tests/docs``);
- :func:`cli_reference`: every command of the real ``harness`` parser with each of its options
  and their help, read from the parser (whatever registers the commands);
- :func:`api_pages`: one page per public module (see :func:`public_modules`), rendered by
  mkdocstrings' Python handler from the docstrings, listing exactly the module's ``__all__``.

Used by ``docs/_gen/mkdocs_hooks.py`` (at ``mkdocs build``) and by the docs tests.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPEC_MARKER = "harness_core_spec"

# -- public modules -------------------------------------------------------------------------

# Directories of a package that hold no importable public API.
_NOT_API = {"tests", "template", "static", "__pycache__"}


def package_dirs() -> list[Path]:
    """The runtime, the contract and each plugin's top-level package, in that order."""
    found = [ROOT / "harness_core", ROOT / "hookspecs" / "harness_hookspecs"]
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        for init in sorted(pyproject.parent.glob("*/__init__.py")):
            if init.parent.name not in _NOT_API:
                found.append(init.parent)
    return found


def module_all(path: Path, module: str) -> list[str] | None:
    """A module's ``__all__`` (read from the source when it is a literal, else by importing
    the module), or None when it has none."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            try:
                return [str(name) for name in ast.literal_eval(node.value)]  # type: ignore[arg-type]
            except ValueError:  # computed: ask the module itself
                return list(importlib.import_module(module).__all__)
    return None


def _module_name(package: Path, path: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def public_modules() -> dict[str, list[str]]:
    """``{module: __all__}`` for every public module.

    Public: each top-level package above (which must define ``__all__``), and every module
    below one that defines ``__all__`` and has no ``_``-prefixed part in its path. A module
    becomes documented by declaring what it exports; nothing here names a module.
    """
    modules: dict[str, list[str]] = {}
    for package in package_dirs():
        for path in sorted(package.rglob("*.py")):
            relative = path.relative_to(package).parts
            if any(part in _NOT_API for part in relative[:-1]):
                continue
            if any(part.startswith("_") for part in relative if part != "__init__.py"):
                continue
            names = module_all(path, _module_name(package, path))
            top = path == package / "__init__.py"
            if names is None and not top:
                continue
            modules[_module_name(package, path)] = names or []
    return modules


def page_path(module: str) -> str:
    return f"reference/api/{module}.md"


def api_page(module: str, names: list[str], submodules: set[str] = frozenset()) -> str:
    """A module's page: its docstring and every name of its ``__all__``; a name that is a
    submodule gets its docstring (the submodule's own page, when public, has its members)."""
    members = "\n".join(f"        - {name}" for name in names if name not in submodules)
    parts = [
        "\n".join(
            [
                f"::: {module}.{name}",
                "    options:",
                "      show_root_heading: true",
                "      heading_level: 2",
                "      members: false",
                "",
            ]
        )
        for name in names
        if name in submodules
    ]
    names = [name for name in names if name not in submodules]
    return "\n".join(
        [
            f"# `{module}`",
            "",
            f"::: {module}",
            "    options:",
            "      show_root_heading: false",
            "      show_root_toc_entry: false",
            "      members:" if names else "      members: false",
            *([members] if names else []),
            "",
            *parts,
        ]
    )


def api_index(modules: dict[str, list[str]]) -> str:
    lines = [
        "# Python API reference",
        "",
        "Generated at build time by [mkdocstrings](https://mkdocstrings.github.io/python/) from "
        "the docstrings: one page per public module, listing exactly the names in its "
        "`__all__` (a test compares them). The guides explain how they fit together: "
        "[host applications](../host-apps.md), [plugin authors](../plugin-authors.md).",
        "",
        "| module | what it is | names |",
        "|---|---|---|",
    ]
    for module, names in modules.items():
        summary = _summary(module)
        lines.append(f"| [`{module}`](api/{module}.md) | {summary} | {len(names)} |")
    return "\n".join(lines) + "\n"


def _summary(module: str) -> str:
    for package in package_dirs():
        if module == package.name or module.startswith(package.name + "."):
            rest = module.split(".")[1:]
            path = package.joinpath(*rest)
            source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
            first = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
            return markdown(first).replace("|", "\\|")
    return ""


def _submodules(module: str, names: list[str]) -> set[str]:
    found = set()
    for package in package_dirs():
        if module == package.name or module.startswith(package.name + "."):
            base = package.joinpath(*module.split(".")[1:])
            for name in names:
                if (base / f"{name}.py").exists() or (base / name / "__init__.py").exists():
                    found.add(name)
    return found


def api_pages() -> dict[str, str]:
    modules = public_modules()
    pages = {"reference/python-api.md": api_index(modules)}
    for module, names in modules.items():
        pages[page_path(module)] = api_page(module, names, _submodules(module, names))
    return pages


# -- hooks ----------------------------------------------------------------------------------


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


ROLE = re.compile(r":\w+:`~?([\w.]+)(?:\(\))?`")


def markdown(doc: str | None) -> str:
    """A docstring as Markdown: Sphinx roles and double backticks become inline code."""
    text = ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", doc or "")
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


# -- CLI ------------------------------------------------------------------------------------


def cli_parser() -> argparse.ArgumentParser:
    """The ``harness`` command's whole parser, every command registered."""
    from harness_core.cli import build_parser

    parameters = inspect.signature(build_parser).parameters
    if "only_command" in parameters:  # a parser limited to one command is the fast path
        return build_parser(None, only_command=False)
    return build_parser()


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_help(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name or choice.metavar == name:
                    return choice.help or ""
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        return str(action.metavar or action.dest)
    metavar = ""
    if action.nargs != 0:
        default = action.dest.upper()
        if action.metavar is not None:
            metavar = " " + (
                " ".join(action.metavar)
                if isinstance(action.metavar, tuple)
                else str(action.metavar)
            )
        elif action.choices is not None:
            metavar = " {" + ",".join(str(c) for c in action.choices) + "}"
        else:
            metavar = " " + default
    return ", ".join(f"{option}{metavar}" for option in action.option_strings)


def _action_help(action: argparse.Action) -> str:
    help_text = action.help or ""
    if help_text == argparse.SUPPRESS:
        return ""
    if "%(" in help_text:
        params = {**vars(action), "prog": ""}
        params = {k: v for k, v in params.items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(str(c) for c in params["choices"])
        help_text = help_text % params
    return help_text


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """``parser``'s own arguments (its subcommands' choice is not one), hidden ones included."""
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


def option_row(action: argparse.Action) -> tuple[str, str]:
    """The two cells of ``action``'s row in the CLI reference: how it is written, its help."""
    return _cell(_invocation(action)), _cell(_action_help(action))


def options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        rows.append(f"| `{_cell(_invocation(action))}` | {_cell(_action_help(action))} |")
    if not rows:
        return []
    return ["| argument | what it does |", "|---|---|", *rows, ""]


def cli_reference() -> str:
    parser = cli_parser()
    lines = [
        "# CLI reference",
        "",
        "Generated from the `harness` command's own parser (`harness_core.cli`) at build time: "
        "every command, every argument and option with its help text.",
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        "## Global options",
        "",
        *options_table(parser),
        "## Commands",
        "",
    ]
    commands = subcommands(parser)
    lines += ["| command | what it does |", "|---|---|"]
    lines += [
        f"| [`harness {name}`](#harness-{name}) | {_cell(_command_help(parser, name))} |"
        for name in commands
    ]
    lines.append("")
    for name, sub in commands.items():
        lines += [f"### `harness {name}`", ""]
        description = sub.description or _command_help(parser, name)
        if description:
            lines += [_cell(description), ""]
        lines += ["```text", sub.format_usage().strip(), "```", ""]
        lines += options_table(sub)
        if sub.epilog:
            lines += [sub.epilog.strip(), ""]
        for nested_name, nested in subcommands(sub).items():  # e.g. harness policy check
            lines += [f"#### `harness {name} {nested_name}`", ""]
            if nested.description or _command_help(sub, nested_name):
                lines += [_cell(nested.description or _command_help(sub, nested_name)), ""]
            lines += ["```text", nested.format_usage().strip(), "```", ""]
            lines += options_table(nested)
    return "\n".join(lines)


def pages() -> dict[str, str]:
    """Every generated page: ``{path under docs/: Markdown}``."""
    return {
        "reference/hooks.md": hook_reference(),
        "reference/cli.md": cli_reference(),
        **api_pages(),
    }


def distribution_modules() -> dict[str, str]:
    """``{top-level package: distribution name}`` of each plugin (for the docs tests)."""
    found = {}
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
        for init in sorted(pyproject.parent.glob("*/__init__.py")):
            if init.parent.name not in _NOT_API:
                found[init.parent.name] = name
    return found
