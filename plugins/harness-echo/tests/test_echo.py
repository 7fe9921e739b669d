import anyio
import pytest
from harness_echo import echo

from harness_core import Controller, plugins_from


@pytest.fixture
def controller_factory(tmp_path):
    def make():
        return Controller(
            plugins=plugins_from([echo]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        )

    return make


def test_echo_streams_the_prompt_back(controller_factory, tmp_path):
    async def main():
        async with controller_factory() as controller:
            ref = await controller.open_session(harness="echo", workspace=str(tmp_path))
            result = await controller.run_turn(ref, "hello there")
            return result

    result = anyio.run(main)
    assert result.status == "completed"
    assert result.text == "echo: hello there"
    assert [e.type for e in result.events] == [
        "turn.started",
        "message.delta",
        "message.delta",
        "message.delta",
        "message.completed",
        "turn.completed",
    ]


def test_echo_sleep_can_be_cancelled(controller_factory, tmp_path):
    async def main():
        async with controller_factory() as controller:
            ref = await controller.open_session(harness="echo", workspace=str(tmp_path))
            async with controller.turn(ref, "sleep 30") as turn:
                with anyio.fail_after(5):
                    first = await turn.__anext__()
                    assert first.type == "turn.started"
                    await controller.cancel_turn(ref, turn.turn_id)
                    rest = [event async for event in turn]
            return rest

    rest = anyio.run(main)
    assert [e.type for e in rest] == ["turn.cancelled"]
