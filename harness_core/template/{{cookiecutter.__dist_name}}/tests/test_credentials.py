"""The credential resolver's own behaviour, directly and through the runtime."""

from importlib.metadata import entry_points

import anyio
from harness_core import Controller, harness, plugins_from
from harness_hookspecs import CredentialRequest

from {{ cookiecutter.__package_name }} import plugin
from {{ cookiecutter.__package_name }}.resolver import PREFIX
from {{ cookiecutter.__package_name }}.resolver import {{ cookiecutter.__class_prefix }}CredentialResolver as Resolver

DIST = {{ cookiecutter.__dist_name | tojson }}

SECRET = "sk-test-0123456789abcdef0123456789"


@harness("credentials-probe")
async def probe(message, session):
    # A careless harness that prints the injected secret: the runtime must redact it.
    token = session.env.get("PROBE_TOKEN")
    yield f"injected={token is not None} value={token}"


def test_resolve_maps_namespaced_host_variables():
    resolver = Resolver({PREFIX + "PROBE_TOKEN": SECRET, PREFIX + "bad-name": "x", "OTHER": "y"})
    found = anyio.run(resolver.resolve, CredentialRequest(harness="credentials-probe"))
    assert [(c.env_var, c.value) for c in found] == [("PROBE_TOKEN", SECRET)]
    assert SECRET not in repr(found)


def test_a_session_gets_the_credential_and_no_record_shows_it(tmp_path, monkeypatch):
    monkeypatch.setenv(PREFIX + "PROBE_TOKEN", SECRET)

    async def main():
        async with Controller(
            plugins=plugins_from([plugin, probe]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        ) as controller:
            ref = await controller.open_session(
                harness="credentials-probe", workspace=str(tmp_path)
            )
            result = await controller.run_turn(ref, "show me")
            return result, controller.export(ref.session_id)

    result, bundle = anyio.run(main)
    assert result.status == "completed"
    assert "injected=True" in result.text
    assert SECRET not in repr(result.events) and SECRET not in repr(bundle)


def test_the_entry_point_is_installed():
    found = [ep for ep in entry_points(group="harness_core") if ep.name == DIST]
    assert found, "not installed: run `pip install -e .[test]` first"
    assert found[0].load() is plugin
