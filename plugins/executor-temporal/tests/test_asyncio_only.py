"""The Temporal controller is asyncio-only (temporalio's client is): under trio it refuses with
one clear line instead of failing inside the SDK."""

from __future__ import annotations

import anyio
import pytest
from executor_temporal.client import TemporalController
from harness_hookspecs import HarnessError
from temporalio.client import Client

trio = pytest.importorskip("trio", reason="trio is not installed")


def test_under_trio_every_entry_refuses_with_unsupported_feature(temporal_address, tmp_path):
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"

    async def connect() -> None:
        await TemporalController.connect(temporal_address, ledger=ledger)

    refusals = []
    with pytest.raises(HarnessError) as refused:
        trio.run(connect)
    refusals.append(refused.value)
    # a controller built on asyncio, then used from trio: each call refuses the same way
    client = anyio.run(Client.connect, temporal_address)
    controller = TemporalController(client, ledger=ledger)
    calls = [
        lambda: controller.__aenter__(),
        lambda: controller.open_session(harness="stdio-jsonl"),
        lambda: controller.cancel_turn("hs_x"),
        lambda: controller.close_session("hs_x"),
        lambda: controller.pending_permissions("hs_x"),
    ]
    for call in calls:

        async def attempt(call=call) -> None:
            await call()

        with pytest.raises(HarnessError) as refused:
            trio.run(attempt)
        refusals.append(refused.value)
    controller.ledger.close()
    assert {error.reason for error in refusals} == {"unsupported-feature"}
    assert all("\n" not in str(error) and "asyncio" in str(error) for error in refusals)
    # the same controller works on asyncio
    assert anyio.run(connect_on_asyncio, temporal_address, ledger) == "asyncio"


async def connect_on_asyncio(address: str, ledger: str) -> str:
    async with await TemporalController.connect(address, ledger=ledger):
        return "asyncio"
