"""What one turn changed in its workspace, read back from the session's checkpoint store: the
turn's ``turn-start`` and ``turn-end`` checkpoints (their ``checkpoint.created`` events), the
files between them (``--numstat``) and the full patch. ``harness diff`` prints it; ``harness
serve`` answers it (``GET /api/sessions/{id}/turns/{turn}/diff``) for the viewer's diff view.

Blocking (git runs as a child process): callers on an event loop use a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_hookspecs import CheckpointCreated, Event, HarnessError

from .checkpoints import CheckpointSettings, CheckpointStore, store_directory

__all__ = ["MAX_PATCH_CHARS", "numstat_row", "turn_checkpoints", "turn_diff"]

#: The most patch text :func:`turn_diff` returns (a longer one is cut and says so).
MAX_PATCH_CHARS = 1_000_000


def turn_checkpoints(events: Sequence[Event], turn: str | None) -> tuple[str, str, str]:
    """The turn (an id, a unique prefix, or its number from 1; default the last with an end
    checkpoint) and its start and end checkpoint ids; ``turn-not-found`` otherwise."""
    started = [event.turn_id for event in events if event.type == "turn.started"]
    if turn is not None and turn.isdigit():
        number = int(turn)
        if not 1 <= number <= len(started):
            raise HarnessError("turn-not-found", f"the session has {len(started)} turns")
        turn = started[number - 1]
    ends: dict[str, str] = {}
    starts: dict[str, str] = {}
    for event in events:
        payload = event.payload
        if not isinstance(payload, CheckpointCreated) or payload.turn_id is None:
            continue
        if payload.reason == "turn-end":
            ends[payload.turn_id] = payload.checkpoint_id
        elif payload.reason == "turn-start":
            starts[payload.turn_id] = payload.checkpoint_id
    candidates = [t for t in ends if t in starts and (turn is None or t.startswith(turn))]
    if turn is None and candidates:
        candidates = candidates[-1:]
    if len(candidates) != 1:
        raise HarnessError("turn-not-found", "no single turn with checkpoints matches")
    chosen = candidates[0]
    return chosen, starts[chosen], ends[chosen]


def numstat_row(line: str) -> dict[str, Any]:
    """A ``--numstat`` line as ``{"path", "added", "removed"}`` (``None``: a binary file)."""
    added, removed, path = line.split("\t", 2)
    return {
        "path": path,
        "added": int(added) if added.isdigit() else None,
        "removed": int(removed) if removed.isdigit() else None,
    }


def turn_diff(
    state_root: Path,
    session_id: str,
    workspace: str | None,
    events: Sequence[Event],
    turn: str | None,
    *,
    patch: bool = True,
    max_patch: int = MAX_PATCH_CHARS,
) -> dict[str, Any]:
    """The turn's files and (``patch``) its patch, cut at ``max_patch`` characters
    (``truncated``), from the checkpoint store under ``state_root``. ``invalid-request`` when
    the session has no workspace or this host holds no checkpoint store of it."""
    turn_id, start, end = turn_checkpoints(events, turn)
    if workspace is None:
        raise HarnessError("invalid-request", "the session has no workspace")
    directory = store_directory(state_root, session_id)
    if not directory.is_dir():
        raise HarnessError("invalid-request", "no checkpoint store of this session on this host")
    store = CheckpointStore(directory, workspace, CheckpointSettings())
    found: dict[str, Any] = {
        "session_id": session_id,
        "turn_id": turn_id,
        "from": start,
        "to": end,
        "files": [numstat_row(line) for line in store.changes(start, end)],
    }
    if patch:
        text = store.diff(start, end)
        found["patch"] = text[:max_patch]
        found["truncated"] = len(text) > max_patch
    return found
