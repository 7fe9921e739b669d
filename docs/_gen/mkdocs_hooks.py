"""MkDocs hook: add the generated reference pages (see ``reference.py``) to the site, and each
public module's API page to the navigation under "Python API"."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_spec = importlib.util.spec_from_file_location(
    "harness_docs_reference", Path(__file__).with_name("reference.py")
)
assert _spec is not None and _spec.loader is not None
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)

_PAGES: dict[str, str] = {}


def on_config(config: Any) -> Any:
    _PAGES.clear()
    _PAGES.update(reference.pages())
    modules = [path for path in _PAGES if path.startswith("reference/api/")]
    _expand(config["nav"], modules)
    return config


def _expand(nav: list[Any], modules: list[str]) -> None:
    """Replace the nav entry of ``reference/python-api.md`` by a section: the index, then one
    page per module."""
    for index, item in enumerate(nav):
        if isinstance(item, dict):
            for title, value in item.items():
                if value == "reference/python-api.md":
                    section = [{"Overview": value}]
                    section += [{re.sub(r"^reference/api/|\.md$", "", m): m} for m in modules]
                    nav[index] = {title: section}
                elif isinstance(value, list):
                    _expand(value, modules)


def on_files(files: Files, config: Any) -> Files:
    for path, content in _PAGES.items():
        files.append(File.generated(config, path, content=content))
    return files
