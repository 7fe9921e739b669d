"""The posture knob: recorded on the session (event and ledger record), dangerous+open refused."""

from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxSpec

from harness_core import Controller, harness, plugins_from


@harness("poser", features=("resume", "cancel", "permissions"))
async def poser(message, session):
    return "ok"


def controller(tmp_path, *extra, dangerous_grant=True) -> Controller:
    return Controller(
        plugins=plugins_from([poser, *extra]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
        dangerous_grant=dangerous_grant,
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


def _open_error(tmp_path, *extra, grant=True, **fields) -> HarnessError:
    async def main():
        async with controller(tmp_path, *extra, dangerous_grant=grant) as c:
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


@pytest.mark.parametrize("grant", [False, (), ("other-agent",), "reviewer"])
def test_dangerous_without_a_grant_is_policy_refused_and_opens_nothing(tmp_path, grant):
    # _open_error also checks that nothing was recorded
    error = _open_error(
        tmp_path,
        grant=grant,
        posture="dangerous",
        agent="reviewer",
        sandbox=SandboxSpec(network="none"),
    )
    assert error.reason == "policy-refused"
    assert error.hint == "the dangerous posture is not granted to agent 'reviewer'"
    anonymous = _open_error(
        tmp_path, grant=grant, posture="dangerous", sandbox=SandboxSpec(network="none")
    )
    assert anonymous.hint == "the dangerous posture is not granted to this session"


@pytest.mark.parametrize("grant", [True, ("reviewer",), {"reviewer", "x"}])
def test_a_granted_agent_passes_the_grant_check(tmp_path, grant):
    # Past the grant, the sandbox check still applies: no provider here enforces network none.
    error = _open_error(
        tmp_path,
        grant=grant,
        posture="dangerous",
        agent="reviewer",
        sandbox=SandboxSpec(network="none"),
    )
    assert error.reason == "policy-refused" and "not granted" not in error.hint


def test_dangerous_on_resume_needs_the_grant(tmp_path):
    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(harness="poser", workspace=str(tmp_path))
        async with controller(tmp_path, dangerous_grant=False) as c:
            with pytest.raises(HarnessError) as info:
                await c.resume_session(
                    ref, posture="dangerous", sandbox=SandboxSpec(network="none")
                )
            events = c.ledger.events(ref.session_id)
            return info.value, [e.type for e in events]

    error, types = anyio.run(main)
    assert error.reason == "policy-refused" and "not granted" in error.hint
    assert "session.resumed" not in types


def test_cli_dangerous_needs_grant_dangerous_and_then_runs(tmp_path):
    import shutil
    import subprocess

    from tests.helpers import harness_cmd

    if shutil.which("bwrap") is None or not _installed("sandbox_bubblewrap"):
        pytest.skip("the dangerous posture needs an enforcing sandbox (bubblewrap)")
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
    base = [*harness_cmd(), "run", "echo", "hi", "--posture", "dangerous", "--network", "none"]
    base += ["--sandbox", "bubblewrap", "--ledger", ledger, "--workspace", str(tmp_path)]
    refused = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "harness: error: policy-refused: the dangerous posture is not granted to this session"
    ]
    sessions = [*harness_cmd(), "sessions", "--json", "--ledger", ledger]
    assert subprocess.run(sessions, capture_output=True, text=True).stdout.strip() == ""
    granted = subprocess.run(
        [*base, "--grant-dangerous"], capture_output=True, text=True, timeout=120
    )
    assert granted.returncode == 0, granted.stderr
    assert "echo: hi" in granted.stdout


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
