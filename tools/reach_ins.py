"""Count cross-module private reach-ins: ``obj._name`` where ``obj`` is not ``self``/``cls`` and
``_name`` is defined nowhere in the same file (no ``def``/``class``, assignment, attribute
assignment, parameter or import of that name there).

    python tools/reach_ins.py            # project code (harness_core, hookspecs, plugins)
    python tools/reach_ins.py --tests    # the tests
    python tools/reach_ins.py -v         # every site, file:line obj._name
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Underscore names their owners document as public.
DOCUMENTED = {("os", "_exit"), ("sys", "_getframe")}


def _is_protocol(node: ast.ClassDef) -> bool:
    return any(ast.unparse(base).split("[")[0].endswith("Protocol") for base in node.bases)


def _defined(tree: ast.AST) -> set[str]:
    """Names the file itself defines. A Protocol's members do not count: a Protocol declaring
    another module's underscores is the reach-in written down, not a definition."""
    names: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef) and _is_protocol(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
    return names


def reach_ins(path: Path) -> Iterator[tuple[int, str]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError):
        return
    defined = _defined(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if name in defined or (
            isinstance(node.value, ast.Name) and (node.value.id, name) in DOCUMENTED
        ):
            continue
        yield node.lineno, f"{ast.unparse(node.value)}.{name}"


def _files(tests: bool) -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        parts = rel.parts
        if any(p.startswith(".") or p in ("node_modules", "build", "site") for p in parts):
            continue
        if "{{" in str(rel) or parts[0] in ("cookiecutter-template", "benchmarks", "tools", "docs"):
            continue
        if parts[:2] == ("harness_core", "template"):  # cookiecutter's Jinja names, not Python
            continue
        is_test = "tests" in parts or parts[-1].startswith("test_") or parts[-1] == "conftest.py"
        if is_test == tests:
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", action="store_true", help="count in the tests instead")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every site")
    args = parser.parse_args(argv)
    total = 0
    for path in _files(args.tests):
        for line, text in reach_ins(path):
            total += 1
            if args.verbose:
                print(f"{path.relative_to(ROOT)}:{line}: {text}")
    print(f"{'tests' if args.tests else 'project code'}: {total} cross-module private reach-ins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
