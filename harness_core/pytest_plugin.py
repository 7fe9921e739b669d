"""The pytest plugin of harness_core (entry point ``pytest11``): the conformance kit in any test suite.

Three ways for a plugin author to run the kit:

- on the command line: ``pytest --harness-conformance NAME`` adds one test per conformance check
  of the installed harness ``NAME`` (repeatable; ``--harness-conformance-timeout S``);
- a fixture: ``def test_it(harness_conformance): report = harness_conformance("name")`` returns
  the :class:`~harness_core.conformance.ConformanceReport` (workspace under ``tmp_path``);
- a parametrised helper, one test per check, the kit run once per module::

      from harness_core.pytest_plugin import conformance_tests

      test_conformance = conformance_tests("my-harness")  # or an adapter / @harness function

Importing this module is cheap: the kit itself is imported only when a test needs it.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["assert_conformant", "conformance_tests"]

_OPTION = "--harness-conformance"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness-conformance", "harness_core conformance kit")
    group.addoption(
        _OPTION,
        action="append",
        default=[],
        metavar="NAME",
        dest="harness_conformance",
        help="run the conformance kit against the installed harness NAME (repeatable)",
    )
    group.addoption(
        "--harness-conformance-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        dest="harness_conformance_timeout",
        help="per-turn deadline for the conformance kit (default 60)",
    )


def _check_names() -> tuple[str, ...]:
    from harness_core.conformance import CHECK_NAMES

    return CHECK_NAMES


class ConformanceFailure(Exception):
    """A conformance check failed (reported without a Python traceback)."""


class ConformanceItem(pytest.Item):
    """One conformance check of one harness; the kit runs once per harness and session."""

    def __init__(self, *, harness: str, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.harness = harness
        self.check = check

    def runtest(self) -> None:
        cache = self.config.stash.setdefault(_REPORTS, {})
        report = cache.get(self.harness)
        if report is None:
            from harness_core.conformance import run_conformance

            report = cache[self.harness] = run_conformance(
                self.harness,
                timeout=self.config.getoption("harness_conformance_timeout"),
            )
        result = report[self.check]
        if result.skipped:
            pytest.skip(f"{self.check}: {result.detail}")
        if not result.passed:
            raise ConformanceFailure(f"{self.check}: {result.detail}\n\n{report.format_table()}")

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"harness conformance {self.harness}: {self.check}"


_REPORTS = pytest.StashKey[dict[str, Any]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: our items exist before -k/-m deselection runs.
    names = config.getoption("harness_conformance", default=None) or []
    if not names:
        return
    added = [
        ConformanceItem.from_parent(
            session,
            name=f"harness-conformance[{name}]::{check}",
            nodeid=f"harness-conformance[{name}]::{check}",
            harness=name,
            check=check,
        )
        for name in names
        for check in _check_names()
    ]
    items[:0] = added
    # Count them as collected (the terminal's "collected N items" line).
    config.hook.pytest_collectreport(
        report=pytest.CollectReport("harness-conformance", "passed", None, list(added))
    )


@pytest.fixture
def harness_conformance(tmp_path: Any) -> Any:
    """Run the conformance kit: ``harness_conformance(name_or_adapter, **kwargs) -> report``.

    Keyword arguments go to :func:`harness_core.conformance.run_conformance`; the workspace
    defaults to a directory under ``tmp_path``.
    """
    from harness_core.conformance import run_conformance

    def run(harness: Any, **kwargs: Any) -> Any:
        if "workspace" not in kwargs:
            workspace = tmp_path / "conformance-workspace"
            workspace.mkdir(exist_ok=True)
            kwargs["workspace"] = workspace
        return run_conformance(harness, **kwargs)

    return run


def assert_conformant(report: Any) -> None:
    """Fail the current test with the report's table unless every check passed."""
    if not report.passed:
        pytest.fail(
            f"conformance failed: {', '.join(report.failed)}\n\n{report.format_table()}",
            pytrace=False,
        )


def conformance_tests(harness: Any, **kwargs: Any) -> Any:
    """A test function parametrised over every conformance check (the kit runs once).

    ``harness`` is a harness name, an adapter, an ``@harness`` function, or a zero-argument
    callable returning one of those (called when the kit first runs). ``kwargs`` go to
    :func:`harness_core.conformance.run_conformance`.
    """
    cache: dict[str, Any] = {}

    @pytest.mark.parametrize("check", _check_names())
    def test_harness_conformance(check: str) -> None:
        if "report" not in cache:
            from harness_core.conformance import run_conformance
            from harness_core.registry import as_adapter

            target = harness
            if callable(target) and not isinstance(target, str) and as_adapter(target) is None:
                target = target()
            cache["report"] = run_conformance(target, **kwargs)
        report = cache["report"]
        result = report[check]
        if result.skipped:
            pytest.skip(f"{check}: {result.detail}")
        if not result.passed:
            pytest.fail(f"{check}: {result.detail}\n\n{report.format_table()}", pytrace=False)

    return test_harness_conformance
