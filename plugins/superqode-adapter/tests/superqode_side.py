"""What the tests run inside superqode's own venv (superqode 2.25 and this project installed):
``python superqode_side.py COMMAND ARGS...``, one JSON object printed on success.

- ``make-session STORE OUT``: a session made with superqode's own API - a direct Python harness
  (``DirectPythonHarnessAdapter``) on its ``FileHarnessStore``: a turn with a tool call, a turn
  that fails, a checkpoint - exported by superqode's controller to ``OUT``;
- ``read-bundle PATH STORE``: read a v1 bundle with superqode's reader (``HarnessRunRecord.
  from_dict`` per run, its events through the store's reader), load it into a ``FileHarnessStore``
  and have superqode's controller export it again; prints what superqode read;
- ``conformance SPEC``: ``run_harness_conformance`` through harness_superqode's adapter for each
  harness of the JSON ``SPEC`` (``[{"harness", "model", "config", "id"}]``); prints each report;
- ``discover``: the installed ``superqode.harnesses`` entry points superqode finds.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path


async def make_session(store_dir: str, out: str) -> dict:
    from superqode.harness import (
        DirectPythonHarnessAdapter,
        FileHarnessStore,
        HarnessCreateRequest,
        HarnessEvent,
        HarnessProtocolController,
    )

    async def reviewer(message, session):
        if "fail" in message.content:
            raise RuntimeError("the reviewer broke: secret upstream text")

        async def stream():
            yield HarnessEvent(
                type="tool.requested",
                data={
                    "tool_call_id": "call_1",
                    "tool_name": "read_file",
                    "arguments": {"path": "a.py"},
                },
            )
            yield HarnessEvent(
                type="tool.completed",
                data={"tool_call_id": "call_1", "tool_name": "read_file", "result": "print(1)"},
            )
            yield f"reviewed: {message.content}"

        return stream()

    adapter = DirectPythonHarnessAdapter("team-reviewer", reviewer, name="Team reviewer")
    controller = HarnessProtocolController([adapter], store=FileHarnessStore(store_dir))
    session = await controller.create(
        HarnessCreateRequest(
            harness_id="team-reviewer", provider="anthropic", model="claude-sonnet"
        )
    )
    for prompt in ("Review the diff", "now fail please"):
        async for _event in controller.send(session, prompt):
            pass
    await controller.checkpoint(session)
    bundle = controller.export(session).to_dict()
    Path(out).write_text(json.dumps(bundle))
    return {"session_id": session.session_id, "events": len(bundle["events"])}


async def read_bundle(path: str, store_dir: str) -> dict:
    from superqode.harness import FileHarnessStore, HarnessProtocolController
    from superqode.harness.protocol import (
        CANONICAL_EVENT_TYPES,
        HarnessCheckpoint,
        HarnessDescriptor,
        HarnessSessionRef,
    )
    from superqode.harness.store import HarnessRunRecord

    data = json.loads(Path(path).read_text())
    runs = [HarnessRunRecord.from_dict(run) for run in data["runs"]]
    events = [event for run in runs for event in run.events]
    # the bundle's own event list is the runs' events, in order
    assert [e.event_id for e in events] == [e["event_id"] for e in data["events"]]
    for run in runs:  # each run: sequence 1..n, its envelope, one terminal at its end
        assert [e.sequence for e in run.events] == list(range(1, len(run.events) + 1)), run.run_id
        assert all(e.run_id == run.run_id and e.session_id == run.session_id for e in run.events)
    checkpoints = [HarnessCheckpoint(**c) for c in data["checkpoints"]]
    descriptor = data["descriptor"]
    # superqode's file store holds the runs as it would have written them; its controller
    # reads them back and exports the same evidence
    store = FileHarnessStore(store_dir)
    for run in data["runs"]:
        (store.runs_dir / f"{run['run_id']}.json").write_text(json.dumps(run))

    adapter = type("Exported", (), {})()  # the exported harness, for superqode's controller
    adapter.descriptor = HarnessDescriptor(
        id=descriptor["id"],
        name=descriptor["name"],
        protocol_version=descriptor["protocol_version"],
    )
    controller = HarnessProtocolController([adapter], store=store)
    session = HarnessSessionRef(**data["session"])
    again = controller.export(session)
    return {
        "runs": [
            {"run_id": r.run_id, "status": r.status, "types": [e.type for e in r.events]}
            for r in runs
        ],
        "event_ids": [e.event_id for e in events],
        "parents": [e.parent_event_id for e in events],
        "canonical": sorted({e.type for e in events} & CANONICAL_EVENT_TYPES),
        "other_types": sorted({e.type for e in events} - CANONICAL_EVENT_TYPES),
        "checkpoints": [c.checkpoint_id for c in checkpoints],
        "reexported_ids": [e.event_id for e in again.events],
        "session": again.session.to_dict(),
    }


async def conformance(spec_path: str) -> dict:
    from harness_superqode import HarnessplaneAdapter
    from superqode.harness.conformance import render_harness_conformance, run_harness_conformance

    reports = []
    for item in json.loads(Path(spec_path).read_text()):
        options = dict(item.get("options") or {})
        if item.get("function"):  # a one-function harness defined here
            from harness_core import Result, harness, plugins_from

            @harness(item["harness"], features=("resume", "cancel", "usage"))
            async def reviewer(message, session):
                return Result(f"protocol-ok ({message.content})")

            options["plugins"] = plugins_from([reviewer])
        adapter = HarnessplaneAdapter(
            item["harness"],
            adapter_id=item.get("id"),
            model=item.get("model"),
            config=item.get("config") or {},
            workspace=item["workspace"],
            **options,
        )
        report = await run_harness_conformance(adapter, working_directory=Path(item["workspace"]))
        reports.append(
            {
                **report.to_dict(),
                "text": render_harness_conformance(report),
                "capabilities": adapter.descriptor.capabilities.to_dict(),
            }
        )
    return {"reports": reports}


async def cancel(workspace: str, ledger: str, state_dir: str) -> dict:
    """superqode's controller cancels an echo turn sleeping 30 s; steer is refused (echo does
    not declare it)."""
    import time

    from harness_superqode import HarnessplaneAdapter
    from superqode.harness import HarnessCreateRequest, HarnessProtocolController
    from superqode.harness.protocol import HarnessCapabilityError

    adapter = HarnessplaneAdapter("echo", workspace=workspace, ledger=ledger, state_dir=state_dir)
    controller = HarnessProtocolController([adapter])
    session = await controller.create(HarnessCreateRequest(harness_id=adapter.descriptor.id))
    events = []

    async def consume():
        async for event in controller.send(session, "sleep 30"):
            events.append(event.type)

    started = time.monotonic()
    task = asyncio.ensure_future(consume())
    while not adapter.is_running(session.session_id):  # the turn is under way
        await asyncio.sleep(0.05)
    try:
        await controller.steer(session, "faster")
        steer = "accepted"
    except HarnessCapabilityError:
        steer = "unsupported"
    await controller.cancel(session)
    await asyncio.wait_for(task, 20)
    stored = controller.store.list_runs(session_id=session.session_id)
    return {
        "events": events,
        "seconds": time.monotonic() - started,
        "steer": steer,
        "status": [run.status for run in stored],
        "stored": [e.type for run in stored for e in run.events],
        "session_id": session.session_id,
    }


async def send(spec_path: str, store_path: str, prompt: str, session_id: str = "") -> dict:
    """One turn in this process on superqode's SQLite store: a new session, or (``session_id``)
    one another process made, resumed by superqode's controller from its store alone."""
    from harness_superqode import HarnessplaneAdapter
    from superqode.harness import HarnessCreateRequest, HarnessProtocolController
    from superqode.harness.store import SQLiteHarnessStore

    (item,) = json.loads(Path(spec_path).read_text())
    adapter = HarnessplaneAdapter(
        item["harness"],
        model=item.get("model"),
        config=item.get("config") or {},
        workspace=item["workspace"],
        **dict(item.get("options") or {}),
    )
    controller = HarnessProtocolController([adapter], store=SQLiteHarnessStore(store_path))
    if session_id:
        session = await controller.resume(session_id)
    else:
        session = await controller.create(HarnessCreateRequest(harness_id=adapter.descriptor.id))
    events = [event async for event in controller.send(session, prompt)]
    answer = [e.data.get("content") for e in events if e.type == "message.created"]
    return {"session_id": session.session_id, "types": [e.type for e in events], "answer": answer}


async def steer(spec_path: str, text: str, go: str) -> dict:
    """superqode's controller steers a running turn once the test says the model has its
    first request (the file ``go`` exists); the turn's events as superqode recorded them."""
    from harness_superqode import HarnessplaneAdapter
    from superqode.harness import HarnessCreateRequest, HarnessProtocolController

    (item,) = json.loads(Path(spec_path).read_text())
    adapter = HarnessplaneAdapter(
        item["harness"],
        model=item.get("model"),
        config=item.get("config") or {},
        workspace=item["workspace"],
        **dict(item.get("options") or {}),
    )
    controller = HarnessProtocolController([adapter])
    session = await controller.create(HarnessCreateRequest(harness_id=adapter.descriptor.id))
    types = []
    async for event in controller.send(session, "say hi"):
        types.append(event.type)
        if len(types) == 3 and "adapter.turn.steered" not in types:
            while not Path(go).exists():  # the model's first answer is on its way (3 s)
                await asyncio.sleep(0.05)
            await controller.steer(session, text)
    return {"session_id": session.session_id, "types": types}


async def discover() -> dict:
    from superqode.harness.discovery import discover_harness_adapters

    found = discover_harness_adapters(include_builtins=False)
    return {"harnesses": [entry.to_dict() for entry in found]}


COMMANDS = {
    "make-session": make_session,
    "read-bundle": read_bundle,
    "conformance": conformance,
    "discover": discover,
    "cancel": cancel,
    "send": send,
    "steer": steer,
}

if __name__ == "__main__":
    result = asyncio.run(COMMANDS[sys.argv[1]](*sys.argv[2:]))
    print(json.dumps(result))
