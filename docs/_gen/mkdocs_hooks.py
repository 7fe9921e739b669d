"""MkDocs hook: add the generated reference pages (see ``reference.py``) to the site."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_spec = importlib.util.spec_from_file_location(
    "harness_docs_reference", Path(__file__).with_name("reference.py")
)
assert _spec is not None and _spec.loader is not None
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def on_files(files: Files, config: Any) -> Files:
    for path, render in reference.PAGES.items():
        files.append(File.generated(config, path, content=render()))
    return files
