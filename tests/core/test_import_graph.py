"""No import circle inside harness_core: every import counts, top-level, lazy or TYPE_CHECKING.

The graph is read from the source (``ast``), not from ``sys.modules``, so an import inside a
function or under ``if TYPE_CHECKING:`` is an edge too: a circle that only typing or a lazy import
hides is still a circle between two modules that each need the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness_core

PACKAGE = Path(harness_core.__file__).parent
#: Not runtime code: the cookiecutter template (rendered into new projects).
SKIP = ("template",)


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        if any(part in SKIP for part in relative.parts):
            continue
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                # ``from . import x`` imports the submodule x (if there is one).
                submodule = f"{module}.{alias.name}"
                targets.add(submodule if submodule in known else module)
    found = set()
    for target in targets:
        while target and target not in known and "." in target:
            target = target.rpartition(".")[0]
        if target in known and target != name:
            found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def test_harness_core_has_no_import_circle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 40  # the walk really read the package
    assert "harness_core.controller" in graph["harness_core.conformance.run"]
    circles = cycles(graph)
    described = [
        " <-> ".join(c) + ": " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        for c in circles
    ]
    assert circles == [], "\n".join(described)


#: Every distribution's package: the contract, the runtime and each plugin.
ROOT = PACKAGE.parent
DISTRIBUTIONS = sorted(
    [ROOT / "hookspecs" / "harness_hookspecs", PACKAGE]
    + [
        package
        for plugin in (ROOT / "plugins").iterdir()
        for package in plugin.iterdir()
        if (package / "__init__.py").is_file()
    ]
)


def house_graph() -> dict[str, set[str]]:
    """One graph over every distribution's modules (an edge may cross distributions)."""
    known: dict[str, Path] = {}
    for package in DISTRIBUTIONS:
        known.update(modules(package))
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_import_circle_in_any_distribution_nor_across_them():
    graph = house_graph()
    assert {"harness_hookspecs", "executor_temporal", "ledger_postgresql"} <= set(graph)
    assert len(DISTRIBUTIONS) >= 15  # the contract, the runtime and every plugin
    circles = cycles(graph)
    described = [
        " <-> ".join(c) + ": " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        for c in circles
    ]
    assert circles == [], "\n".join(described)


def test_neither_the_contract_nor_the_runtime_imports_a_plugin():
    graph = house_graph()
    plugin_packages = {p.name for p in DISTRIBUTIONS} - {"harness_core", "harness_hookspecs"}
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.split(".")[0] in ("harness_core", "harness_hookspecs")
        for target in targets
        if target.split(".")[0] in plugin_packages
    )
    assert upward == []


def test_the_walk_finds_a_circle_hidden_behind_type_checking_and_a_lazy_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import b\n"
    )
    (package / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (package / "c.py").write_text("from pkg.sub.b import f\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.sub.b"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


#: Modules a run of a CLI adapter never needs before it spawns the CLI (issue 19, start-up):
#: the function harness, the structured-output turn, the transcript reader, hashlib's OpenSSL.
NOT_IMPORTED_BY_A_RUN = (
    "harness_core.function_harness",
    "harness_core.structured_output",
    "harness_core.turn_protocol",
    "harness_core.transcript",
    "hashlib",
)


def test_the_controller_and_harness_run_import_only_what_every_run_needs():
    import subprocess
    import sys

    probe = (
        "import sys, harness_core.controller, harness_core.cli.run\n"
        f"print([m for m in {NOT_IMPORTED_BY_A_RUN!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_names_mirrored_to_keep_an_import_lazy_agree():
    from harness_core import function_harness, registry

    assert registry.ADAPTER_ATTRIBUTE == function_harness.ADAPTER_ATTRIBUTE


def test_the_digests_are_hashlibs():
    import hashlib

    from harness_core.digests import sha1_hex, sha256_hex

    for data in (b"", b"abc", "s\u00fc\u20ac".encode() * 50):
        assert sha1_hex(data) == hashlib.sha1(data).hexdigest()
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
