"""Under CI a skip fails the run naming its reason; outside CI it stays a skip with the reason
(tests/strict_skips.py, loaded for every test directory by pyproject.toml's addopts)."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT
from tests.strict_skips import ALLOWED_UNDER_CI, refused, under_ci

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_needs_a_tool():
    pytest.skip("bubblewrap unavailable: bwrap: setting up uid map: Permission denied")

@pytest.mark.skipif(True, reason="needs Debian's chromium")
def test_marked():
    pass

@pytest.fixture
def server():
    pytest.skip("Temporal dev server unavailable: no temporal binary")

def test_fixture_skips(server):
    pass

def test_on_another_kernel():
    pytest.skip("this kernel has no /proc/PID/task/TID/children")

def test_runs():
    pass
"""

MODULE_SKIPPED = """
import pytest
pytest.importorskip("no_such_extra_here", reason="needs pip no-such-extra (dev extra)")

def test_never_collected():
    pass
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ("tests.strict_skips",)')
    pytester.makepyfile(test_tools=TESTS, test_extra=MODULE_SKIPPED)
    return pytester


def test_outside_ci_missing_tools_skip_with_their_reasons(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest("-ra")
    result.assert_outcomes(passed=1, skipped=5)
    result.stdout.fnmatch_lines(["*bubblewrap unavailable: bwrap: setting up uid map*"])
    assert result.ret == pytest.ExitCode.OK


def test_under_ci_every_refused_skip_fails_naming_what_was_missing(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest("-ra")
    # the kernel's missing feature stays a skip; the module skipped at collection fails the
    # session at its end without stopping the others
    result.assert_outcomes(passed=1, failed=1, errors=2, skipped=2)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_tools.py::test_needs_a_tool - Failed: CI runs every test, this one "
            "skipped: bubblewrap unavailable: bwrap: setting up uid map: Permission denied",
            "ERROR test_tools.py::test_marked - Failed: *skipped: needs Debian's chromium",
            "ERROR test_tools.py::test_fixture_skips - Failed: *Temporal dev server unavailable*",
            "test_extra.py: needs pip no-such-extra (dev extra)",
            "SKIPPED * this kernel has no /proc/PID/task/TID/children",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_module_skipped_at_collection_alone_still_fails_the_ci_run(pytester, monkeypatch):
    pytester.makeconftest('pytest_plugins = ("tests.strict_skips",)')
    pytester.makepyfile(test_extra=MODULE_SKIPPED)
    monkeypatch.setenv("CI", "1")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*CI runs every test, these modules skipped*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_under_xdist_workers_the_ci_run_still_fails_on_every_refused_skip(suite, monkeypatch):
    """``./dev test`` runs the suite on pytest-xdist workers: the workers collect and run, the
    controlling process decides the exit status."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the workers import tests.strict_skips
    result = suite.runpytest_subprocess("-n", "2", "-ra")
    result.assert_outcomes(passed=1, failed=1, errors=2, skipped=2)
    result.stdout.fnmatch_lines(
        ["*CI runs every test, these modules skipped*", "test_extra.py: needs pip no-such-extra*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("1", True), ("yes", True), ("", False), ("0", False), ("false", False)],
)
def test_ci_is_set_the_way_ci_services_set_it(value, expected):
    assert under_ci({"CI": value}) is expected
    assert under_ci({}) is False


def test_only_facts_of_the_machine_stay_skips():
    for reason in (
        "this kernel has no /proc/PID/task/TID/children",
        "no writable cgroup v2 hierarchy with cgroup.kill here",
        "the seccomp filter is x86_64 only",
        "ClaudeStreamParser needs constructor arguments",
        "no scripted rm -rf call for this CLI",
    ):
        assert not refused(reason), reason
    assert len(ALLOWED_UNDER_CI) == 5  # a new allowance is a decision: name it above
    for reason in (
        "claude is not installed (PATH or HARNESS_CLI_PATH; run .ci/install-clis.sh)",
        "bubblewrap unavailable: bwrap not found",
        "PostgreSQL server unavailable: no initdb",
        "needs Debian's chromium (./dev test installs it as root)",
        "Temporal dev server unavailable: timed out",
        "the user switch needs a root host",
        "no writable cgroup v2 hierarchy with cgroup.kill here, and bubblewrap unavailable",
    ):
        assert refused(reason), reason
