"""Hex digests of names derived from session ids (event-id prefixes, state directories, a run's
pid file), the same as ``hashlib`` gives, from CPython's built-in ``_sha1``/``_sha2`` modules
when present: importing ``hashlib`` loads its OpenSSL backend, ~2 ms of every ``harness run``'s
start-up, for a few short digests (``hashlib`` itself falls back to these modules)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def _builtin(modules: tuple[str, ...], name: str) -> Callable[[bytes], Any]:
    for module in modules:
        try:
            function: Callable[[bytes], Any] = getattr(import_module(module), name)
        except (ImportError, AttributeError):
            continue
        return function
    import hashlib  # an interpreter built without them

    fallback: Callable[[bytes], Any] = getattr(hashlib, name)
    return fallback


_sha1 = _builtin(("_sha1",), "sha1")
# _sha2 from Python 3.12, _sha256 before: the running one's first (a module not found is
# looked for in every sys.path entry)
_sha256 = _builtin(
    ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256", "_sha2"), "sha256"
)


def sha1_hex(data: bytes) -> str:
    """``hashlib.sha1(data).hexdigest()``."""
    return str(_sha1(data).hexdigest())


def sha256_hex(data: bytes) -> str:
    """``hashlib.sha256(data).hexdigest()``."""
    return str(_sha256(data).hexdigest())


def event_id_prefix(session_id: str) -> str:
    """The prefix of a session's event ids (``ev_<16 hex>_``; the sequence follows)."""
    return "ev_" + sha1_hex(session_id.encode())[:16] + "_"
