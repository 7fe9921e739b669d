"""Small JSON files under the user's cache directory (plugin listing, CLI versions).

``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harnessplane`` (``~/.cache/harnessplane``).
Everything here is a cache: a file that cannot be read is absent, one that cannot be written
is skipped, and writes are atomic (a reader never sees half a file).
"""

from __future__ import annotations

import json
import os
from typing import Any

ENV_CACHE_DIR = "HARNESS_CACHE_DIR"


def cache_dir() -> str:
    explicit = os.environ.get(ENV_CACHE_DIR)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "harnessplane")


def read_json(path: str) -> Any:
    """The file's JSON, or ``None`` when it is missing or damaged."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_json(path: str, value: Any) -> None:
    """Write ``value`` atomically (temporary file + rename); never raises for I/O."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(value, handle)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
