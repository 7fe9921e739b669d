"""Under CI a skipped test is a failed test, with the skip's reason.

Outside CI a test whose tool is missing (a pinned CLI, bubblewrap, PostgreSQL, Chromium, the
Temporal dev server, an extra) skips and says why, so a developer without them can still run the
rest. CI installs all of them (``./dev test``); there a skip would let the run go green without
a whole group of tests, so it fails instead, naming what was missing. The repository's
pyproject.toml loads this plugin (addopts ``-p tests.strict_skips``) for every test directory.

Only skips that no install can fix stay skips under CI: a kernel or architecture without the
feature (:data:`ALLOWED_UNDER_CI`). Each has its reason there.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

#: Skip reasons that stay skips under CI, each a fact of the machine or of the test's own
#: parametrisation, never a missing install.
ALLOWED_UNDER_CI: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # the kernel (gVisor, an old one) has no children file: proctree falls back to a scan
        r"^this kernel has no /proc/PID/task/TID/children$",
        # a container without a writable cgroup v2 hierarchy: the process-group kill is used
        r"^no writable cgroup v2 hierarchy with cgroup\.kill here$",
        # the seccomp filter is written for x86_64 syscall numbers
        r"^the seccomp filter is x86_64 only$",
        # parametrised over every adapter's parser: some cannot be built without arguments
        r"needs constructor arguments$",
        # parametrised over every CLI profile: some script no rm -rf call
        r"^no scripted rm -rf call for this CLI$",
    )
)


def under_ci(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """``CI`` set to anything but empty, ``0`` or ``false`` (as CI services set it)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def refused(reason: str) -> bool:
    """Whether a skip with ``reason`` fails the run under CI."""
    return not any(pattern.search(reason) for pattern in ALLOWED_UNDER_CI)


def _skip_reason(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    skipped = excinfo.value
    if not isinstance(skipped, pytest.skip.Exception):
        return None
    return str(skipped.msg or "no reason given")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A skip raised while setting up or running a test (``pytest.skip``, a ``skipif`` marker,
    a fixture that skips) becomes the test's failure, before the report is made."""
    if call.excinfo is None or not under_ci():
        return
    reason = _skip_reason(call.excinfo)
    if reason is None or not refused(reason):
        return
    try:
        pytest.fail(f"CI runs every test, this one skipped: {reason}", pytrace=False)
    except pytest.fail.Exception:
        call.excinfo = pytest.ExceptionInfo.from_current()


_REFUSED_AT_COLLECTION = pytest.StashKey[list[str]]()


class _CollectionRefusals:
    """A module skipped while collected (``importorskip`` of a missing extra) is remembered and
    fails the session at its end: failing the collection itself would stop every other test.
    Under pytest-xdist the workers collect and their skipped collections reach
    ``pytest_collectreport`` in the controlling process too, whose exit status is the run's."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.skipped or not under_ci():
            return
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        if refused(reason):
            refusals = self.config.stash.setdefault(_REFUSED_AT_COLLECTION, [])
            refusals.append(f"{report.nodeid}: {reason}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_CollectionRefusals(config), "strict_skips.collection")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    refusals = config.stash.get(_REFUSED_AT_COLLECTION, [])
    if refusals:
        terminalreporter.section("CI runs every test, these modules skipped", red=True)
        for line in refusals:
            terminalreporter.line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.stash.get(_REFUSED_AT_COLLECTION, []) and exitstatus in (0, 5):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
