"""The harness's own behaviour, through the real runtime (no install needed for these)."""

from importlib.metadata import entry_points

import anyio
import pytest
from harness_core import Controller, plugins_from

from {{ cookiecutter.__package_name }}.harness import run

NAME = {{ cookiecutter.plugin_name | tojson }}
DIST = {{ cookiecutter.__dist_name | tojson }}


@pytest.fixture
def controller(tmp_path):
    return Controller(
        plugins=plugins_from([run]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )


def test_a_turn_streams_the_answer(controller, tmp_path):
    async def main():
        async with controller:
            ref = await controller.open_session(harness=NAME, workspace=str(tmp_path))
            first = await controller.run_turn(ref, "hello there")
            second = await controller.run_turn(ref, "again")
            await controller.close_session(ref)
            return first, second

    first, second = anyio.run(main)
    assert first.status == "completed"
    assert first.text == "turn 1: hello there"
    assert second.text == "turn 2: again"
    assert [e.type for e in first.events] == [
        "turn.started",
        "message.delta",
        "message.delta",
        "message.delta",
        "message.completed",
        "turn.completed",
    ]


def test_describe(controller):
    descriptor = controller.describe(NAME)
    assert descriptor.provider == NAME
    assert "local" in descriptor.targets


def test_the_entry_point_is_installed():
    found = [ep for ep in entry_points(group="harness_core") if ep.name == DIST]
    assert found, "not installed: run `pip install -e .[test]` first"
    assert found[0].load() is run
