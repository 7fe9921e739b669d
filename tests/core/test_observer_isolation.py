"""One raising observer blinds no other: each failure is reported once with the observer's name,
and every healthy observer sees every event, whichever order they were registered in."""

from __future__ import annotations

import itertools

import anyio
import pytest

from harness_core import hookimpl


class Audit:
    def __init__(self) -> None:
        self.seen: list[int] = []

    @hookimpl
    def on_event(self, event):
        self.seen.append(event.sequence)


class Raising:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def on_event(self, event):
        self.calls += 1
        raise RuntimeError("observer bug")


def _run(make_controller, workspace, talker, observers):
    async def main():
        async with make_controller(talker, *observers) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            result = await controller.run_turn(ref, "a b")
            await controller.close_session(ref)
            return result, controller.events(ref.session_id), controller.delivery

    return anyio.run(main)


@pytest.mark.parametrize("order", list(itertools.permutations(["audit", "bad1", "bad2", "audit2"])))
def test_every_healthy_observer_sees_every_event_in_any_order(
    make_controller, workspace, capfd, order
):
    from tests.core.test_controller import talker

    made = {"audit": Audit(), "audit2": Audit(), "bad1": Raising(), "bad2": Raising()}
    result, events, delivery = _run(
        make_controller, workspace, talker, [made[name] for name in order]
    )
    assert result.status == "completed"
    everything = [e.sequence for e in events]
    assert len(everything) >= 5
    assert made["audit"].seen == everything
    assert made["audit2"].seen == everything
    assert made["bad1"].calls == made["bad2"].calls == len(everything)
    # each failing observer reported once, by name
    err = capfd.readouterr().err.splitlines()
    reports = [line for line in err if "on_event observer" in line]
    assert len(reports) == 2, err
    names = {name for name in delivery.observer_failures}
    assert len(names) == 2 and set(delivery.observer_failures.values()) == {len(everything)}
    for name in names:
        assert name.startswith("Raising@")
        assert f"harness: the on_event observer {name} failed; continuing" in reports


def test_an_observer_registered_by_name_is_reported_by_that_name(tmp_path, workspace, capfd):
    from harness_core import Controller, plugins_from
    from tests.core.test_controller import talker

    plugins = plugins_from([talker])
    plugins.register(Raising(), "host-audit-exporter")
    audit = Audit()
    plugins.register(audit, "audit")

    async def main():
        async with Controller(
            plugins=plugins, ledger=f"sqlite:///{tmp_path}/l.sqlite", state_dir=tmp_path
        ) as controller:
            ref = await controller.open_session(harness="talker", workspace=workspace)
            await controller.run_turn(ref, "a b")
            return controller.events(ref.session_id)

    events = anyio.run(main)
    assert audit.seen == [e.sequence for e in events]
    err = capfd.readouterr().err
    assert err.count("harness: the on_event observer host-audit-exporter failed; continuing") == 1
