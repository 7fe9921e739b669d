"""The docs site: every hookspec documented (as datasette's tests/test_docs.py checks its
hooks), the guides naming every hook and CLI command, and `mkdocs build --strict` passing."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def load_reference():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "_gen" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_reference()
HOOKS = reference.hookspecs()


def test_the_contract_has_hookspecs():
    names = {name for _, name, _ in HOOKS}
    assert {"register_harnesses", "harness_run_turn", "on_event", "conformance_profile"} <= names


@pytest.mark.parametrize(("module", "name", "function"), HOOKS, ids=[h[1] for h in HOOKS])
def test_every_hookspec_is_documented(module, name, function):
    doc = function.__doc__ or ""
    assert doc.strip(), f"hookspec {name} has no docstring"
    # the contract's docstrings say who calls the hook and what it returns
    assert "Called" in doc, f"hookspec {name}: say who calls it and when"
    assert "Return" in doc or "return" in doc, f"hookspec {name}: say what it returns"
    assert f"### `{name}`" in reference.hook_reference()
    guide = (DOCS / "plugin-authors.md").read_text()
    assert f"| `{name}` |" in guide, f"hook {name} is missing from the plugin-author guide's table"


def test_every_cli_command_is_in_the_cli_reference():
    from harness_core.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if hasattr(a, "choices") and a.choices).choices
    text = reference.cli_reference()
    for name in commands:
        assert f"## `harness {name}`" in text


def test_api_reference_covers_the_controller():
    text = reference.api_reference()
    for method in ("open_session", "turn", "run_turn", "cancel_turn", "close_session"):
        assert f"### `Controller.{method}`" in text
    assert "### `Plugins.register`" in text


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="needs mkdocs (the dev or docs extra)"
)
def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for page in (
        "index.html",
        "reference/hooks/index.html",
        "reference/cli/index.html",
        "reference/python-api/index.html",
        "host-apps/index.html",
        "plugin-authors/index.html",
        "serve/index.html",
        "images/viewer-session.png",
    ):
        assert (site / page).exists(), page
    hooks_page = (site / "reference/hooks/index.html").read_text()
    for _, name, _ in HOOKS:
        assert f'id="{name}"' in hooks_page
    shutil.rmtree(site)
