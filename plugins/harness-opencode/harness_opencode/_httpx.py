"""Import httpx without its command-line client.

``httpx/__init__`` imports ``httpx._main`` (its ``httpx`` command) whenever ``click``,
``pygments`` and ``rich`` are installed - about 60 % of ``import httpx`` (~80 ms), paid by every
``harness run opencode`` that never runs that command. Importing this module first imports
httpx with ``httpx._main`` unavailable for the moment, then puts back an ``httpx.main`` that
loads the real command when it is used (called or inspected), so nothing changes for anyone
who does use it.
"""

from __future__ import annotations

import sys
from typing import Any


class _LazyCli:
    """Stands for ``httpx.main`` (a click command) until it is used."""

    @staticmethod
    def _command() -> Any:
        from httpx._main import main

        return main

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._command()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._command(), name)


def _import_httpx() -> None:
    if "httpx" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # "from ._main import" fails
    try:
        import httpx
    finally:
        if "httpx._main" in sys.modules and sys.modules["httpx._main"] is None:
            del sys.modules["httpx._main"]
    httpx.main = _LazyCli()  # type: ignore[assignment]


_import_httpx()
