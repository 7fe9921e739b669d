"""``harness checkpoints``, ``diff``, ``rewind`` and ``fork`` (see
:mod:`harness_core.branching`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness_hookspecs import CheckpointCreated, Event, HarnessError

from ..context import default_state_root
from ..turn_diff import turn_diff
from .errors import EXIT_OK
from .ledger_read import open_for_reading, resolve_session
from .output import print_json, print_json_lines
from .prompt import check_workspace


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


def cmd_diff(args: argparse.Namespace) -> int:
    record, events = _session_events(args)
    found = turn_diff(
        default_state_root(), args.session, record.workspace, events, args.turn,
        patch=not args.stat, max_patch=sys.maxsize,
    )  # fmt: skip
    if args.json:
        print_json(found)
        return EXIT_OK
    print(f"turn {found['turn_id']}: {len(found['files'])} files changed")
    for row in found["files"]:
        print(f"  +{row['added']} -{row['removed']}  {row['path']}")
    if not args.stat:
        sys.stdout.write(found["patch"])
    return EXIT_OK


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
    fields = {} if args.workspace is None else {"workspace": check_workspace(args.workspace)}

    async def fork() -> Any:
        async with Controller(ledger=args.ledger) as controller:
            return await controller.fork(args.session, at=args.at, **fields)

    child = anyio.run(fork)
    if args.json:
        print_json({"session_id": child.session_id, "parent_session_id": args.session})
    else:
        print(child.session_id)
    return EXIT_OK
