"""The sandbox provider's own behaviour, directly and through the runtime."""

import os
from importlib.metadata import entry_points

import anyio
import pytest
from harness_core import Controller, harness, plugins_from
from harness_hookspecs import HarnessError, SandboxRequest, SandboxSpec

from {{ cookiecutter.__package_name }} import plugin
from {{ cookiecutter.__package_name }}.provider import NAME
from {{ cookiecutter.__package_name }}.provider import {{ cookiecutter.__class_prefix }}SandboxProvider as Provider

DIST = {{ cookiecutter.__dist_name | tojson }}


@harness("sandbox-probe")
async def probe(message, session):
    # A one-function harness that reports the environment the sandbox gave its session.
    yield session.env.get("HOME", "unset")


def request(workspace, network="open"):
    return SandboxRequest(
        session_id="s-1",
        harness="sandbox-probe",
        workspace=workspace,
        spec=SandboxSpec(provider=NAME, network=network),
    )


def test_provision_and_finalize(tmp_path):
    provider = Provider()

    async def main():
        handle = await provider.provision(request(str(tmp_path)))
        assert handle.provider == NAME
        assert handle.workspace == str(tmp_path)
        assert os.path.isdir(handle.env["HOME"]) and os.path.isdir(handle.env["TMPDIR"])
        await provider.finalize(handle, "success")
        return handle

    handle = anyio.run(main)
    assert not os.path.exists(handle.env["HOME"])


def test_unenforceable_network_policy_is_refused(tmp_path):
    with pytest.raises(HarnessError) as error:
        anyio.run(Provider().provision, request(str(tmp_path), "none"))
    assert error.value.reason == "policy-refused"


def test_a_session_runs_in_the_sandbox(tmp_path):
    async def main():
        async with Controller(
            plugins=plugins_from([plugin, probe]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        ) as controller:
            spec = SandboxSpec(provider=NAME)
            ref = await controller.open_session(
                harness="sandbox-probe", workspace=str(tmp_path), sandbox=spec
            )
            result = await controller.run_turn(ref, "where am I")
            await controller.close_session(ref)
            return result

    result = anyio.run(main)
    assert result.status == "completed"
    home = result.text
    assert home and home != "unset" and os.path.basename(home).startswith(NAME)
    assert not os.path.exists(home)  # finalized on close


def test_the_entry_point_is_installed():
    found = [ep for ep in entry_points(group="harness_core") if ep.name == DIST]
    assert found, "not installed: run `pip install -e .[test]` first"
    assert found[0].load() is plugin
