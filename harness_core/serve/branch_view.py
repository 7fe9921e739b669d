"""The viewer's branching controls per turn: "fork from here" (at the turn's terminal event),
"rewind to before this turn" (its ``turn-start`` checkpoint) and the files the turn changed
(its ``turn-end`` checkpoint's ``--numstat`` lines; ``checkpoint.skipped`` says why there are
none), whose full patch the page fetches when they are opened. Values go through :func:`~.viewer.esc`-style escaping; ``static/viewer.js`` posts the
buttons' actions to the API (``/fork``, ``/rewind``) with the page's token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from harness_hookspecs import (
    TERMINAL_TYPES,
    CheckpointCreated,
    CheckpointSkipped,
    Event,
)

__all__ = ["BranchPoint", "branch_points", "render_branch"]


@dataclass
class BranchPoint:
    """What one turn offers to fork from, rewind to, and what it changed."""

    end_event: str | None = None
    start_checkpoint: str | None = None
    changes: tuple[str, ...] = ()
    changes_omitted: int = 0
    skipped: str | None = None
    ended_turns: list[str] = field(default_factory=list)


def branch_points(events: Sequence[Event]) -> dict[str, BranchPoint]:
    """Each turn's branch point, read from the session's events."""
    points: dict[str, BranchPoint] = {}
    for event in events:
        payload = event.payload
        if event.type in TERMINAL_TYPES and event.turn_id is not None:
            points.setdefault(event.turn_id, BranchPoint()).end_event = event.event_id
        elif isinstance(payload, CheckpointCreated) and payload.turn_id is not None:
            point = points.setdefault(payload.turn_id, BranchPoint())
            if payload.reason == "turn-start":
                point.start_checkpoint = payload.checkpoint_id
            elif payload.reason == "turn-end":
                point.changes, point.changes_omitted = payload.changes, payload.changes_omitted
        elif isinstance(payload, CheckpointSkipped) and payload.turn_id is not None:
            points.setdefault(payload.turn_id, BranchPoint()).skipped = payload.reason
    return points


def _esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def _change(line: str) -> str:
    added, _, rest = line.partition("\t")
    removed, _, path = rest.partition("\t")
    return (
        f'<li><code class="path">{_esc(path)}</code> <span class="added">+{_esc(added)}</span> '
        f'<span class="removed">-{_esc(removed)}</span></li>'
    )


def render_branch(point: BranchPoint | None, closed: bool, turn_id: str | None = None) -> str:
    """The turn's controls and changed files (nothing for a turn that has not ended); with
    ``turn_id``, opening the files shows the turn's full patch (``viewer.js`` reads it from
    the diff endpoint)."""
    if point is None or point.end_event is None:
        return ""
    buttons = ""
    if not closed:
        buttons += (
            f'<button type="button" class="fork-here" data-at="{_esc(point.end_event)}">'
            "Fork from here</button>"
        )
        if point.start_checkpoint is not None:
            buttons += (
                '<button type="button" class="rewind-here" '
                f'data-checkpoint="{_esc(point.start_checkpoint)}">'
                "Rewind to before this turn</button>"
            )
    files = ""
    if point.changes:
        more = f"<li>and {point.changes_omitted} more</li>" if point.changes_omitted else ""
        count = len(point.changes) + point.changes_omitted
        turn = "" if turn_id is None else f' data-turn="{_esc(turn_id)}"'
        files = (
            f'<details class="changes"{turn}><summary>{count} file{"" if count == 1 else "s"} '
            f"changed</summary><ul>{''.join(_change(line) for line in point.changes)}{more}"
            "</ul></details>"
        )
    elif point.skipped is not None:
        files = f'<div class="changes muted">files changed: unknown ({_esc(point.skipped)})</div>'
    return f'<div class="branch">{buttons}{files}</div>'
