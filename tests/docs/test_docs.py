"""The docs site: every hookspec documented (as datasette's tests/test_docs.py checks its
hooks), the API reference listing every public name, the CLI reference every command and option,
the guides naming every hook, and `mkdocs build --strict` passing."""

from __future__ import annotations

import argparse
import html
import importlib
import importlib.util
import re
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
MODULES = reference.public_modules()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with ``mkdocs build --strict`` (the API pages take ~10 s)."""
    if importlib.util.find_spec("mkdocstrings_handlers.python") is None:
        pytest.skip("needs mkdocs and mkdocstrings-python (the dev or docs extra)")
    site = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return site


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


def test_the_public_modules_are_found():
    # the runtime, the contract and every plugin's top-level package, each with an __all__
    assert {"harness_core", "harness_hookspecs", "harness_core.conformance"} <= set(MODULES)
    for package, distribution in reference.distribution_modules().items():
        assert MODULES.get(package), f"{distribution}: {package} declares no __all__"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_reference_lists_exactly_the_modules_all(module):
    # what the page is generated from is what the module exports
    assert list(importlib.import_module(module).__all__) == MODULES[module]
    page = reference.api_pages()[reference.page_path(module)]
    assert f"::: {module}" in page


def anchors(site: Path, module: str) -> set[str]:
    text = (site / "reference" / "api" / module / "index.html").read_text()
    return {html.unescape(a) for a in re.findall(r'id="([^"]+)"', text)}


def test_every_public_name_is_on_its_reference_page(site):
    missing = {}
    for module, names in MODULES.items():
        found = anchors(site, module)
        absent = [name for name in names if f"{module}.{name}" not in found]
        if absent:
            missing[module] = absent
    assert not missing, f"public names missing from the API reference: {missing}"
    index = (site / "reference" / "python-api" / "index.html").read_text()
    for module in MODULES:
        assert f"api/{module}/" in index, module


def text_of(site: Path, module: str, name: str) -> str:
    """The rendered text of one object's section on its module's page."""
    page = (site / "reference" / "api" / module / "index.html").read_text()
    start = page.index(f'id="{module}.{name}"')
    end = page.find('<h2 id="', start + 1)
    body = re.sub(r"<[^>]+>", "", page[start : end if end > 0 else None])
    return re.sub(r"\s+", " ", html.unescape(body))


def test_constructors_and_fields_are_in_the_reference(site):
    controller = text_of(site, "harness_core", "Controller")
    for parameter in ("env_passthrough", "command_policy", "state_dir", "permission_handler"):
        assert f"{parameter}:" in controller, parameter
    usage = text_of(site, "harness_hookspecs", "Usage")
    assert "input_tokens: int | None = None" in usage and "cost_usd" in usage


def test_every_cli_command_and_option_is_in_the_cli_reference():
    parser = reference.cli_parser()
    text = reference.cli_reference()
    commands = reference.subcommands(parser)
    assert {"run", "sessions", "serve", "cancel"} <= set(commands)
    for name, sub in commands.items():
        assert f"### `harness {name}`" in text
        section = text.split(f"### `harness {name}`", 1)[1].split("\n### ", 1)[0]
        for action in reference.arguments(sub):
            if action.help == argparse.SUPPRESS:
                continue
            written, help_text = reference.option_row(action)
            row = next(
                (line for line in section.splitlines() if line.startswith(f"| `{written}`")),
                None,
            )
            assert row is not None, (
                f"harness {name}: {action.option_strings or action.dest} is not documented"
            )
            assert help_text in row


def test_every_cli_argument_has_help():
    # the CLI reference is generated from the parser: an argument without help is a blank row
    parser = reference.cli_parser()
    commands = {
        f"{name} {nested_name}": nested
        for name, sub in reference.subcommands(parser).items()
        for nested_name, nested in reference.subcommands(sub).items()
    }
    commands.update(reference.subcommands(parser))
    blank = [
        f"harness {name} {' '.join(action.option_strings) or action.dest}"
        for name, sub in commands.items()
        for action in reference.arguments(sub)
        if not action.help
    ]
    blank += [
        f"harness {' '.join(action.option_strings)}"
        for action in reference.arguments(parser)
        if not action.help
    ]
    assert not blank, f"arguments without help text: {blank}"


def test_the_site_builds_strict(site):
    for page in (
        "index.html",
        "reference/hooks/index.html",
        "reference/cli/index.html",
        "reference/python-api/index.html",
        "host-apps/index.html",
        "plugin-authors/index.html",
        "serve/index.html",
        "ledger/index.html",
        "images/viewer-session.png",
    ):
        assert (site / page).exists(), page
    hooks_page = (site / "reference/hooks/index.html").read_text()
    for _, name, _ in HOOKS:
        assert f'id="{name}"' in hooks_page


def test_every_page_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert f" {page.name}" in config, f"{page.name} is not in the mkdocs nav"


PAGES_WITH_CODE = [
    ROOT / "README.md",
    *sorted(DOCS.glob("*.md")),
    *sorted(ROOT.glob("plugins/*/README.md")),
]
PACKAGES = "|".join(sorted({module.split(".")[0] for module in MODULES}))
IMPORT = re.compile(rf"^\s*from ((?:{PACKAGES})(?:\.\w+)*) import ([\w, ]+)", re.M)
DOTTED = re.compile(rf"`((?:{PACKAGES})(?:\.\w+)+)")


def test_what_the_pages_import_is_public():
    # a page imports only what a public module exports, so the API reference documents it
    wrong = []
    for page in PAGES_WITH_CODE:
        for module, names in IMPORT.findall(page.read_text()):
            for name in (n.strip() for n in names.split(",")):
                if module not in MODULES or name not in MODULES[module]:
                    wrong.append(f"{page.relative_to(ROOT)}: from {module} import {name}")
    assert not wrong, "imports of names no public module exports:\n" + "\n".join(wrong)


GUIDES = [
    "README.md",
    "index.md",
    "host-apps.md",
    "plugin-authors.md",
    "turn-protocol.md",
    "serve.md",
    "conformance.md",
]


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` names a module or an attribute of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
        return True
    return False


def test_the_dotted_names_the_pages_use_exist():
    # `harness_core.approvals.PendingApprovals` in prose names something real; in the guides,
    # something public (a public module, or a name one exports), so the reference has it
    wrong = []
    for page in PAGES_WITH_CODE:
        guide = page.relative_to(ROOT).as_posix() in GUIDES
        if not guide and page.parent == DOCS:
            continue
        for dotted in DOTTED.findall(page.read_text()):
            where = f"{page.relative_to(ROOT)}: {dotted}"
            if not resolves(dotted):
                wrong.append(f"{where} (does not exist)")
                continue
            module, _, name = dotted.rpartition(".")
            public = dotted in MODULES or (module in MODULES and name in MODULES[module])
            if guide and not public:
                wrong.append(f"{where} (not public)")
    assert not wrong, "dotted names the pages use:\n" + "\n".join(wrong)


def test_the_events_page_lists_every_event_type():
    from harness_hookspecs import EVENT_TYPES

    page = (DOCS / "events.md").read_text()
    missing = [t for t in sorted(EVENT_TYPES) if f"| `{t}` |" not in page]
    assert not missing, missing
