"""Host tool round trip through the loopback MCP bridge: a real CLI vs. a direct call.

Through a CLI: one turn in which the fake model asks for the host tool ``lookup`` N times in a
row; a round trip is the time from the model request that answered with the tool call to the
next model request, which carries the tool's result (the CLI parses the call, calls the bridge
over HTTP with its bearer token, the bridge records two events and calls the function, the CLI
sends the result back). Bridge only: ``tools/call`` over HTTP from Python (httpx, one client).
Direct: ``await lookup(arguments)``.

    python benchmarks/mcp_bridge.py [--calls 20] [--clis claude-code codex opencode]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import itertools

from _common import ROOT, figure, rmtree, run_async, tempdir

os.environ.setdefault("HARNESS_CLI_PATH", str(ROOT / "tools" / "npm" / "node_modules" / ".bin"))


async def lookup(arguments: Any) -> Any:
    return {"answer": 42, "q": arguments.get("q")}


def tool() -> Any:
    from harness_hookspecs import HostTool

    return HostTool(name="lookup", description="Look up the answer", function=lookup)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(name: str, samples: list[float], note: str = "") -> None:
    figure(f"{name} median", statistics.median(samples) * 1000, "ms", note=note)
    figure(f"{name} p95", p95(samples) * 1000, "ms", note=f"n={len(samples)}")


async def direct(calls: int) -> list[float]:
    samples = []
    for i in range(calls):
        started = time.perf_counter()
        await lookup({"q": str(i)})
        samples.append(time.perf_counter() - started)
    return samples


async def bridge_only(calls: int) -> tuple[list[float], float]:
    import anyio
    import httpx
    from harness_mcp_bridge import Bridge

    bridge = Bridge([tool()])
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    samples: list[float] = []
    async with anyio.create_task_group() as group:
        started = time.perf_counter()
        await group.start(bridge.run)
        up = time.perf_counter() - started
        token = bridge.begin_run("bench", lambda payload: True)
        headers["Authorization"] = f"Bearer {token}"
        async with httpx.AsyncClient() as client:
            for i in range(calls):
                body = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "lookup", "arguments": {"q": str(i)}},
                }
                started = time.perf_counter()
                response = await client.post(bridge.url, json=body, headers=headers)
                samples.append(time.perf_counter() - started)
                assert response.status_code == 200
        await bridge.close()
    return samples, up


async def through_cli(name: str, calls: int) -> list[float]:
    from harness_cli_kit.testing import StaticCredentials
    from harness_mcp_bridge.testing import HARNESSES

    from harness_core import Controller, plugins_from
    from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

    harness = HARNESSES[name]
    call = ToolCall("lookup", {"q": "x"}, mcp_server="harness")
    script = [Step(text="Calling.", tool_calls=[call])]
    script += [Step(tool_calls=[call], match=Match(tool_result=True)) for _ in range(calls - 1)]
    script.append(Step(text="Done.", match=Match(tool_result=True)))
    directory = tempdir("mcp")
    workspace = Path(directory) / "ws"
    workspace.mkdir()
    try:
        plugins = plugins_from([harness.adapter(), StaticCredentials(harness.key_var, harness.key)])
        async with Controller(
            plugins=plugins,
            ledger=f"sqlite:///{directory}/ledger.sqlite",
            state_dir=Path(directory) / "state",
            host_tools=[tool()],
        ) as controller:
            with FakeModelServer(script) as server:
                ref = await controller.open_session(
                    harness=harness.name,
                    workspace=str(workspace),
                    model=harness.model,
                    config=harness.config(server),
                )
                result = await controller.run_turn(ref, "look it up", timeout=300)
                requests = [r for r in server.model_requests() if r.step_index is not None]
        bridged = [e for e in result.events if getattr(e.payload, "name", "") == "bridge.lookup"]
        if result.status != "completed" or not bridged:
            raise SystemExit(f"{name}: no bridged call ({result.status})")
        # A round trip: a request answered by a tool-call step, then the one carrying its
        # result (answered by the next step). The CLIs' side requests fall outside the pairs.
        return [
            later.time - earlier.time
            for earlier, later in itertools.pairwise(requests)
            if later.has_tool_result
            and earlier.step_index is not None
            and later.step_index == earlier.step_index + 1
        ]
    finally:
        rmtree(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--clis", nargs="*", default=["claude-code", "codex", "opencode"])
    args = parser.parse_args()
    report("direct call", run_async(direct, args.calls))
    samples, up = run_async(bridge_only, args.calls)
    figure("bridge start-up", up * 1000, "ms", target="<= 200 ms")
    report("bridge only (HTTP tools/call)", samples)
    for name in args.clis:
        report(
            f"through {name}",
            run_async(through_cli, name, args.calls),
            note="model request to next",
        )


if __name__ == "__main__":
    main()
