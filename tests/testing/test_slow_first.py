"""On xdist workers the files holding a test marked slow are handed out first
(tests/slow_first.py, loaded by pyproject.toml's addopts); without workers the order is kept."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT

pytest_plugins = ["pytester"]

FILE = """
import os
import pytest

{mark}
@pytest.mark.parametrize("count", range({count}))
def test_{name}(count):
    with open(os.environ["ORDER_LOG"], "a") as log:
        log.write("{name}\\n")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ("tests.slow_first",)')
    pytester.makepyfile(
        test_a=FILE.format(mark="", name="a", count=2),
        test_b=FILE.format(mark="", name="b", count=2),
        test_c=FILE.format(mark="@pytest.mark.slow", name="c", count=1),
    )
    pytester.makeini("[pytest]\nmarkers =\n    slow: takes long")
    monkeypatch.setenv("ORDER_LOG", str(pytester.path / "order.log"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the workers import tests.slow_first
    return pytester


def test_a_worker_runs_the_slow_file_first(suite):
    # as ./dev test hands files out: in collection order, not the files with most tests first
    result = suite.runpytest_subprocess("-n", "1", "--dist", "loadfile", "--no-loadscope-reorder")
    result.assert_outcomes(passed=5)
    assert (suite.path / "order.log").read_text().split() == ["c", "a", "a", "b", "b"]


def test_without_workers_the_collection_order_stands(suite):
    result = suite.runpytest_subprocess("-p", "no:xdist")
    result.assert_outcomes(passed=5)
    assert (suite.path / "order.log").read_text().split() == ["a", "a", "b", "b", "c"]
