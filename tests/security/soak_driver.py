"""A controller process for the orphan soak: opens a session under a sandbox, starts a turn and
waits to be killed (``kill -9`` of a controller mid-turn, for sandboxes the CLI cannot pick).

``python soak_driver.py SANDBOX WORKSPACE LEDGER STATE_DIR COMMAND_JSON [SANDBOX_CONFIG_JSON]``
"""

from __future__ import annotations

import json
import sys

import anyio
from harness_hookspecs import SandboxSpec

from harness_core import Controller


async def main(argv: list[str]) -> None:
    sandbox, workspace, ledger, state, command = argv[:5]
    config = json.loads(argv[5]) if len(argv) > 5 else {}
    async with Controller(ledger=ledger, state_dir=state) as controller:
        ref = await controller.open_session(
            harness="stdio-jsonl",
            workspace=workspace,
            sandbox=SandboxSpec(provider=None if sandbox == "direct" else sandbox, config=config),
            config={"command": json.loads(command)},
        )
        async with controller.turn(ref, "hang") as turn:
            async for _ in turn:
                pass


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
