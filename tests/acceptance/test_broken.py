"""Every conformance check can fail: one deliberately broken adapter (or, for what only the
runtime stamps, a broken control plane / ledger store) per check, failing exactly that check."""

from __future__ import annotations

import pytest

from harness_core.conformance import CHECK_NAMES, run_conformance

from .acceptance_fakes import BROKEN, SLOW, FakeAdapter, broken_kwargs

#: Checks whose broken adapters live beside their scenario, in
#: tests/conformance/test_branching_checks.py (SteerRaises, ForkReturnsTheParent, RewindRaises).
BROKEN_ELSEWHERE = {"steer", "fork", "rewind"}
CHECKED_HERE = [name for name in CHECK_NAMES if name not in BROKEN_ELSEWHERE]


def test_every_check_has_a_broken_fixture():
    assert set(BROKEN) | BROKEN_ELSEWHERE == set(CHECK_NAMES)
    assert not set(BROKEN) & BROKEN_ELSEWHERE


def test_the_fake_adapter_passes_every_check(workspace):
    report = run_conformance(FakeAdapter(), workspace=workspace, profile=SLOW)
    assert report.passed, report.format_table()
    assert "1 turn process(es), none left" in report["cancel"].detail  # a real subprocess died


@pytest.mark.parametrize("check", CHECKED_HERE)
def test_broken_fails_exactly_its_check(check, workspace):
    adapter, kwargs = broken_kwargs(check)
    report = run_conformance(adapter, workspace=workspace, profile=SLOW, timeout=20, **kwargs)
    assert not report.passed
    # an adapter that cannot resume at all cannot resume in a new process either
    # and one that leaks a cancelled turn's process leaks the steered turn's too (the steer
    # phase cancels its turn; its check judges that turn's processes)
    expected = {"resume": ["resume", "resume-process"], "cancel": ["cancel", "steer"]}.get(
        check, [check]
    )
    assert report.failed == expected, report.format_table()
    assert report[check].detail  # says why


def test_broken_runs_leave_no_process_behind(workspace):
    import os

    from harness_core.testing.processes import alive

    adapter, kwargs = broken_kwargs("close")
    before = set(os.listdir("/proc"))
    report = run_conformance(adapter, workspace=workspace, profile=SLOW, **kwargs)
    assert report.failed == ["close"]
    pids = [int(p) for p in report["close"].detail.split("[", 1)[1].rstrip("]").split(", ")]
    assert all(str(pid) not in before for pid in pids)
    assert not any(alive(pid) for pid in pids)  # the kit killed what it found leaking
