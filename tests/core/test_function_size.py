"""No function of harness_core runs over 80 lines: a longer one is split where its steps are."""

from __future__ import annotations

import ast
from pathlib import Path

import harness_core

PACKAGE = Path(harness_core.__file__).parent
LIMIT = 80


def long_functions(root: Path, limit: int = LIMIT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "template" in path.relative_to(root).parts:  # the cookiecutter template
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} {length}")
    return found


def test_no_function_of_harness_core_is_over_80_lines():
    assert long_functions(PACKAGE) == []


def test_the_count_sees_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT))
    (tmp_path / "long.py").write_text(f"def long():\n{body}")
    (tmp_path / "short.py").write_text("def short():\n    return 1\n")
    assert long_functions(tmp_path) == [f"long.py:1 long {LIMIT + 1}"]
