"""``harness checkpoints``, ``diff``, ``rewind`` and ``fork`` (see
:mod:`harness_core.branching`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness_hookspecs import CheckpointCreated, Event, HarnessError

from ..checkpoints import CheckpointSettings, CheckpointStore, store_directory
from ..context import default_state_root
from .errors import EXIT_OK, CliError
from .ledger_read import open_for_reading, resolve_session
from .output import print_json, print_json_lines


def _session_events(args: argparse.Namespace) -> tuple[Any, list[Event]]:
    """The session's record and events (``session-not-found`` when the ledger has neither)."""
    resolve_session(args)
    store = open_for_reading(args.ledger)
    if store is None:
        raise HarnessError("session-not-found")
    try:
        record = store.get_session(args.session)
        if record is None:
            raise HarnessError("session-not-found")
        return record, store.events(args.session)
    finally:
        store.close()


def _created(events: list[Event]) -> list[Event]:
    return [event for event in events if isinstance(event.payload, CheckpointCreated)]


def cmd_checkpoints(args: argparse.Namespace) -> int:
    _, events = _session_events(args)
    rows: list[dict[str, Any]] = []
    for event in _created(events):
        payload = event.payload
        assert isinstance(payload, CheckpointCreated)
        rows.append(
            {
                "checkpoint_id": payload.checkpoint_id,
                "reason": payload.reason,
                "turn_id": payload.turn_id,
                "changed": len(payload.changes) + payload.changes_omitted,
                "sequence": event.sequence,
                "timestamp": event.timestamp,
            }
        )
    if args.json:
        print_json_lines(rows)
        return EXIT_OK
    if not rows:
        print("no checkpoints (harness run --checkpoints takes one around each turn)")
    for row in rows:
        changed = f"  {row['changed']} files changed" if row["reason"] == "turn-end" else ""
        turn = f"  {row['turn_id']}" if row["turn_id"] else ""
        print(f"{row['checkpoint_id'][:17]}  {row['reason']:<10}{turn}{changed}")
    return EXIT_OK


def _turn_checkpoints(events: list[Event], turn: str | None) -> tuple[str, str, str]:
    """The turn (an id, a unique prefix, or its number from 1; default the last with an end
    checkpoint) and its start and end checkpoints."""
    started = [event.turn_id for event in events if event.type == "turn.started"]
    if turn is not None and turn.isdigit():
        number = int(turn)
        if not 1 <= number <= len(started):
            raise CliError("turn-not-found", f"the session has {len(started)} turns")
        turn = started[number - 1]
    ends: dict[str, str] = {}
    starts: dict[str, str] = {}
    for event in _created(events):
        payload = event.payload
        assert isinstance(payload, CheckpointCreated)
        if payload.turn_id is not None and payload.reason == "turn-end":
            ends[payload.turn_id] = payload.checkpoint_id
        elif payload.turn_id is not None and payload.reason == "turn-start":
            starts[payload.turn_id] = payload.checkpoint_id
    candidates = [t for t in ends if t in starts and (turn is None or t.startswith(turn))]
    if turn is None and candidates:
        candidates = candidates[-1:]
    if len(candidates) != 1:
        raise CliError("turn-not-found", "no single turn with checkpoints matches")
    chosen = candidates[0]
    return chosen, starts[chosen], ends[chosen]


def cmd_diff(args: argparse.Namespace) -> int:
    record, events = _session_events(args)
    turn_id, start, end = _turn_checkpoints(events, args.turn)
    if record.workspace is None:
        raise CliError("invalid-request", "the session has no workspace")
    store = CheckpointStore(
        store_directory(default_state_root(), args.session), record.workspace, CheckpointSettings()
    )
    changes = store.changes(start, end)
    if args.json:
        print_json(
            {
                "session_id": args.session,
                "turn_id": turn_id,
                "from": start,
                "to": end,
                "files": [_numstat(line) for line in changes],
                **({} if args.stat else {"patch": store.diff(start, end)}),
            }
        )
        return EXIT_OK
    print(f"turn {turn_id}: {len(changes)} files changed")
    for line in changes:
        row = _numstat(line)
        print(f"  +{row['added']} -{row['removed']}  {row['path']}")
    if not args.stat:
        sys.stdout.write(store.diff(start, end))
    return EXIT_OK


def _numstat(line: str) -> dict[str, Any]:
    added, removed, path = line.split("\t", 2)
    return {
        "path": path,
        "added": int(added) if added.isdigit() else None,
        "removed": int(removed) if removed.isdigit() else None,
    }


def cmd_rewind(args: argparse.Namespace) -> int:
    import anyio

    from ..controller import Controller

    resolve_session(args)

    async def rewind() -> Any:
        async with Controller(ledger=args.ledger) as controller:
            await controller.resume_session(args.session)
            return await controller.rewind(args.session, args.checkpoint)

    rewound = anyio.run(rewind)
    if args.json:
        print_json(
            {
                "session_id": args.session,
                "checkpoint_id": rewound.checkpoint_id,
                "conversation": rewound.conversation,
                "turns_kept": rewound.turns_kept,
            }
        )
    else:
        what = (
            f"workspace and conversation ({rewound.turns_kept} turns kept)"
            if rewound.conversation
            else "workspace (this harness cannot rewind its conversation)"
        )
        print(f"rewound {what} to {rewound.checkpoint_id[:17]}")
    return EXIT_OK


def cmd_fork(args: argparse.Namespace) -> int:
    import anyio

    from ..controller import Controller

    resolve_session(args)

    async def fork() -> Any:
        async with Controller(ledger=args.ledger) as controller:
            return await controller.fork(args.session, at=args.at)

    child = anyio.run(fork)
    if args.json:
        print_json({"session_id": child.session_id, "parent_session_id": args.session})
    else:
        print(child.session_id)
    return EXIT_OK
