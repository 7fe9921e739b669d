"""The conformance pytest plugin, tested with pytester: the command-line option, the fixture, the
parametrised helper, and a plugin outside the repo that gets a red test when it is broken."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness_core.conformance import CHECK_NAMES

pytest_plugins = ["pytester"]

N = len(CHECK_NAMES)

GOOD = """
from harness_core import harness

@harness("outside")
async def outside(message, session):
    return "outside: " + message.content
"""

BROKEN = """
from harness_hookspecs import TurnFailed
from harness_core import harness

@harness("outside")
async def outside(message, session):
    yield "partial"
    yield TurnFailed(reason="provider-failed")  # every turn fails: a weak kit says PASS
"""


def make_dist(root: Path, name: str, source: str, entry_points: dict[str, str]) -> None:
    """An installed-looking distribution (module + .dist-info) outside the repo."""
    module = name.replace("-", "_")
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{module}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[harness_core]\n{lines}\n")


@pytest.fixture
def outside_site(tmp_path, monkeypatch):
    """Install a temp harness plugin 'outside' via PYTHONPATH; returns a writer for its source."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.delenv("HARNESS_CORE_PLUGINS", raising=False)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)

    def install(source: str) -> Path:
        make_dist(site, "harness-outside", source, {"outside": "harness_outside:outside"})
        return site

    return install


def test_option_adds_one_test_per_check(pytester):
    result = pytester.runpytest("--harness-conformance", "echo", "-v")
    # echo's profile names no approval prompt: that check is a pytest skip, not a pass
    result.assert_outcomes(passed=N - 1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"*harness-conformance[[]echo[]]::{name} "
            + ("SKIPPED" if name == "approvals" else "PASSED")
            + "*"
            for name in CHECK_NAMES
        ]
    )


def test_option_respects_k_selection(pytester):
    result = pytester.runpytest("--harness-conformance", "echo", "-k", "cancel or resume")
    # cancel, resume, resume-process
    result.assert_outcomes(passed=3, deselected=N - 3)


def test_without_the_option_nothing_is_added(pytester):
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_option_with_an_unknown_harness_fails_red(pytester):
    result = pytester.runpytest("--harness-conformance", "no-such-harness")
    result.assert_outcomes(failed=N)
    result.stdout.fnmatch_lines(["*descriptor: describe failed: invalid-request*"])


def test_parametrised_helper_passes_and_fails(pytester):
    pytester.makepyfile(
        test_good="""
        from harness_core import harness
        from harness_core.pytest_plugin import conformance_tests

        @harness("inline-good")
        async def good(message, session):
            yield "ok"

        test_conformance = conformance_tests(good)
        """,
        test_bad="""
        from harness_hookspecs import TurnFailed
        from harness_core import harness
        from harness_core.pytest_plugin import conformance_tests

        @harness("inline-bad")
        async def bad(message, session):
            yield "partial"
            yield TurnFailed(reason="provider-failed")

        test_conformance = conformance_tests(lambda: bad)
        """,
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2 * N - 3, skipped=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_bad.py::test_conformance[[]turns-completed[]] FAILED*",
            "*turns-completed: turn 1 ended turn.failed (provider-failed)*",
        ]
    )


def test_fixture_returns_the_report(pytester):
    pytester.makepyfile(
        """
        from harness_core.pytest_plugin import assert_conformant

        def test_echo(harness_conformance):
            report = harness_conformance("echo")
            assert report.passed and report["cancel"].passed
            assert_conformant(report)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_plugin_module_imports_cheaply():
    code = (
        "import sys, harness_core.pytest_plugin; "
        "sys.exit(1 if 'harness_core.conformance' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_a_plugin_outside_the_repo_runs_the_kit(pytester, outside_site):
    outside_site(GOOD)
    pytester.makepyfile(
        test_outside="""
        from harness_core.pytest_plugin import conformance_tests

        test_conformance = conformance_tests("outside")
        """
    )
    result = pytester.runpytest_subprocess("--harness-conformance", "outside")
    result.assert_outcomes(passed=2 * N - 2, skipped=2)


def test_a_broken_plugin_outside_the_repo_gets_a_red_test(pytester, outside_site):
    outside_site(BROKEN)
    pytester.makepyfile(
        test_outside="""
        from harness_core.pytest_plugin import conformance_tests

        test_conformance = conformance_tests("outside")
        """
    )
    result = pytester.runpytest_subprocess("--harness-conformance", "outside")
    result.assert_outcomes(passed=2 * (N - 2), skipped=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*harness-conformance[[]outside[]]::turns-completed*",
            "*test_outside.py::test_conformance[[]turns-completed[]]*",
        ]
    )
    assert result.ret == 1
