"""On pytest-xdist workers, the test files that hold a test marked ``slow`` run first.

``./dev test`` hands the suite to its workers a file at a time (``--dist loadfile``), in
collection order. A file that takes minutes (the orphan soak, the built distributions, the
real CLIs' long turns) handed out last keeps one worker busy while the others have nothing left:
started first, it overlaps with everything else. Mark such a test ``@pytest.mark.slow`` (or its
module with ``pytestmark``). A run without workers keeps the collection order.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: order kept within each
