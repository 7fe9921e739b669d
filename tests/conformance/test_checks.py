"""The kit's checks are registered units: one module each, in a fixed report order."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys

from harness_core.conformance import CHECK_NAMES, CHECKS, run_conformance
from harness_core.conformance.checks import ALL
from harness_core.process_table import alive, children, group_members

REPORT_ORDER = [
    "descriptor",
    "turns-completed",
    "envelope",
    "sequence",
    "event-ids",
    "one-terminal",
    "canonical-types",
    "field-bounds",
    "raw-fields",
    "resume",
    "resume-process",
    "cancel",
    "close",
    "usage",
    "approvals",
    "steer",
    "fork",
    "rewind",
    "ledger-round-trip",
    "export",
    "canary",
]


def test_the_checks_in_report_order_each_in_its_own_module():
    assert list(CHECK_NAMES) == REPORT_ORDER
    assert tuple((c.name, c.description) for c in ALL) == CHECKS
    for check in ALL:
        module = importlib.import_module(
            "harness_core.conformance.checks." + check.name.replace("-", "_")
        )
        assert check.judge.__module__ == module.__name__
        assert (module.__doc__ or "").startswith(check.name + ":")
        assert check.description and check.description in (module.__doc__ or "")


def test_every_result_carries_its_checks_description(workspace):
    report = run_conformance("echo", workspace=workspace)
    assert report.passed, report.format_table()
    assert [(r.name, r.description) for r in report.checks] == list(CHECKS)


def test_the_process_table_sees_a_child_and_its_group_until_it_is_gone():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    try:
        assert children().get(child.pid) == child.pid  # its own group
        assert alive(child.pid) and group_members(child.pid) == [child.pid]
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert not alive(child.pid) and child.pid not in children()
    assert group_members(child.pid) == []
