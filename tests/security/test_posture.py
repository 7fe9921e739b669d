"""The posture knob: recorded on the session (event and ledger record), dangerous+open refused."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxSpec

from harness_core import Controller, harness, plugins_from


@harness("poser", features=("resume", "cancel", "permissions"))
async def poser(message, session):
    return "ok"


def controller(tmp_path, *extra) -> Controller:
    return Controller(
        plugins=plugins_from([poser, *extra]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )


@pytest.mark.parametrize("posture", ["strict", "auto"])
def test_posture_is_recorded_on_the_session(tmp_path, posture):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="poser", workspace=str(tmp_path), posture=posture)
            await c.run_turn(ref, "hi")
            return ref, c.events(ref.session_id)[0], c.ledger.get_session(ref.session_id)

    ref, opened, record = anyio.run(main)
    assert opened.type == "session.opened"
    assert opened.payload.posture == posture
    assert record.posture == posture

    # a new controller on the same ledger reads it back, and resume keeps it
    async def reopen():
        async with controller(tmp_path) as c:
            assert c.ledger.get_session(ref.session_id).posture == posture
            await c.resume_session(ref.session_id)
            return c.ledger.get_session(ref.session_id)

    assert anyio.run(reopen).posture == posture


def test_default_posture_is_auto(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="poser", workspace=str(tmp_path))
            return c.events(ref.session_id)[0].payload.posture, c.ledger.get_session(
                ref.session_id
            ).posture

    assert anyio.run(main) == ("auto", "auto")


def _open_error(tmp_path, *extra, **fields) -> HarnessError:
    async def main():
        async with controller(tmp_path, *extra) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="poser", workspace=str(tmp_path), **fields)
            assert c.sessions() == []  # nothing was recorded for a refused session
            return info.value

    return anyio.run(main)


def test_dangerous_with_open_network_is_a_clean_invalid_request(tmp_path):
    for spec in (SandboxSpec(), SandboxSpec(network="open"), SandboxSpec(provider="local")):
        error = _open_error(tmp_path, posture="dangerous", sandbox=spec)
        assert error.reason == "invalid-request"
        assert error.hint == "the dangerous posture is refused with network policy open"
        assert "\n" not in str(error)


def test_dangerous_without_an_enforcing_sandbox_is_policy_refused(tmp_path):
    # No provider named: the direct "sandbox" cannot enforce network none, so it refuses.
    error = _open_error(tmp_path, posture="dangerous", sandbox=SandboxSpec(network="none"))
    assert error.reason == "policy-refused"
    assert "\n" not in str(error)


def test_dangerous_with_the_local_provider_is_policy_refused(tmp_path):
    local_plugin = pytest.importorskip("sandbox_local.plugin")
    error = _open_error(
        tmp_path,
        local_plugin,
        posture="dangerous",
        sandbox=SandboxSpec(provider="local", network="none", config={"root": str(tmp_path)}),
    )
    assert error.reason == "policy-refused"
    assert "network" in error.hint


def test_dangerous_on_resume_with_open_network_is_refused(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="poser", workspace=str(tmp_path))
        async with controller(tmp_path) as c:
            with pytest.raises(HarnessError) as info:
                await c.resume_session(ref, posture="dangerous")
            return info.value

    error = anyio.run(main)
    assert error.reason == "invalid-request"
    assert "dangerous" in error.hint


def test_unknown_posture_is_invalid_request(tmp_path):
    error = _open_error(tmp_path, posture="yolo")
    assert error.reason == "invalid-request"
    assert "posture" in error.hint
