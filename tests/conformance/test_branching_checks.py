"""The steer, fork and rewind checks pass on a harness that does what it claims, skip nothing
on one that claims nothing (refusals are checked), and fail on purpose-built broken adapters."""

from __future__ import annotations

from typing import Any

import pytest
from harness_hookspecs import HarnessError, SessionRef, hookimpl

from harness_core import harness
from harness_core.conformance import run_conformance
from harness_core.function_harness import ADAPTER_ATTRIBUTE, FunctionHarness
from harness_core.plugin_manager import plugins_from

ALL_FEATURES = ("resume", "cancel", "steer", "fork", "checkpoint")


async def answer(message: Any, session: Any) -> str:
    return f"seen {len(session.history)}"


def _adapter(name: str, features: tuple[str, ...], cls: type = FunctionHarness) -> Any:
    return cls(name, answer, features=features)


class SteerRaises(FunctionHarness):
    async def steer_turn(self, request: Any, context: Any) -> None:
        raise HarnessError("provider-failed")


class ForkReturnsTheParent(FunctionHarness):
    async def fork_session(self, request: Any, context: Any) -> SessionRef:
        return request.parent  # not the child's id: the runtime refuses it


class RewindRaises(FunctionHarness):
    async def rewind_session(self, request: Any, context: Any) -> None:
        raise HarnessError("provider-failed")


def _checks(adapter: Any, workspace: str) -> dict[str, Any]:
    plugins = plugins_from([_Register(adapter)])
    report = run_conformance(adapter.name, workspace=workspace, plugins=plugins, timeout=20)
    return {c.name: c for c in report.checks}


class _Register:
    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    @hookimpl
    def register_harnesses(self, register: Any) -> None:
        register(self.adapter)


def test_a_harness_claiming_everything_passes(workspace):
    checks = _checks(_adapter("shaper", ALL_FEATURES), workspace)
    for name in ("steer", "fork", "rewind"):
        assert checks[name].passed and not checks[name].skipped, (name, checks[name].detail)
    assert "one turn.steered" in checks["steer"].detail
    assert "workspace and conversation" in checks["rewind"].detail


def test_a_harness_claiming_nothing_is_refused_cleanly(workspace):
    checks = _checks(_adapter("plain", ("resume", "cancel")), workspace)
    for name in ("steer", "fork", "rewind"):
        assert checks[name].passed, (name, checks[name].detail)
    assert "unsupported-feature" in checks["steer"].detail
    assert "unsupported-feature" in checks["fork"].detail
    assert "conversation not claimed" in checks["rewind"].detail


@pytest.mark.parametrize(
    ("cls", "failing"),
    [(SteerRaises, "steer"), (ForkReturnsTheParent, "fork"), (RewindRaises, "rewind")],
)
def test_broken_adapters_fail_their_check(workspace, cls, failing):
    checks = _checks(_adapter(f"broken-{failing}", ALL_FEATURES, cls), workspace)
    assert not checks[failing].passed, checks[failing].detail
    for name in {"steer", "fork", "rewind"} - {failing}:
        assert checks[name].passed, (name, checks[name].detail)


def test_the_decorator_claims_the_features(workspace):
    @harness("decorated-shaper", features=ALL_FEATURES)
    async def decorated(message: Any, session: Any) -> str:
        return "ok"

    adapter = getattr(decorated, ADAPTER_ATTRIBUTE)
    assert {"steer", "fork", "checkpoint"} <= adapter.describe().features
