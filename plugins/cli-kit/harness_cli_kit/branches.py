"""Where each of our turns ended in the CLI's own conversation, and a branch the next turn makes.

A CLI that forks or rewinds its conversation names the point by its own ids (a message uuid,
an entry id, a thread turn id). The adapter keeps one small JSON file per session under its
``state_dir``: ``turns``, our turn id and the CLI's mark of each turn, oldest first; and
``pending``, the branch (fork or rewind) the next turn's process makes before its prompt -
kept until a turn made it, so a turn that fails before it leaves it for the next.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_hookspecs import ForkSessionRequest

__all__ = ["Branches"]


class Branches:
    """One session's turn marks and pending branch (saved atomically)."""

    def __init__(
        self,
        path: Path,
        turns: list[tuple[str, str]] | None = None,
        pending: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = path
        #: (our turn id, the CLI's mark of it), oldest first
        self.turns: list[tuple[str, str]] = list(turns or [])
        #: what the next turn does to the CLI's conversation before its prompt (``None``: nothing)
        self.pending: dict[str, Any] | None = dict(pending) if pending is not None else None

    @classmethod
    def load(cls, state_dir: str | Path, filename: str) -> Branches:
        """The saved file (an unreadable or missing one: no marks, nothing pending)."""
        path = Path(state_dir) / filename
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        turns = [
            (str(pair[0]), str(pair[1]))
            for pair in data.get("turns") or []
            if isinstance(pair, list) and len(pair) == 2
        ]
        pending = data.get("pending")
        return cls(path, turns, pending if isinstance(pending, dict) else None)

    def save(self) -> None:
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps({"turns": self.turns, "pending": self.pending}))
        partial.replace(self.path)

    def add(self, turn_id: str, mark: str) -> None:
        self.turns.append((turn_id, mark))

    def last_kept(self, kept: Iterable[str]) -> str | None:
        """The mark of the last turn among ``kept`` (our turn ids) that has one."""
        wanted = set(kept)
        return next((mark for ours, mark in reversed(self.turns) if ours in wanted), None)

    def first_dropped(self, kept: Iterable[str]) -> str | None:
        """The mark of the first turn not among ``kept`` (``None``: every marked turn is kept)."""
        wanted = set(kept)
        return next((mark for ours, mark in self.turns if ours not in wanted), None)

    def keep(self, kept: Iterable[str]) -> None:
        """Forget the marks of turns not among ``kept`` (the conversation no longer has them)."""
        wanted = set(kept)
        self.turns = [(ours, mark) for ours, mark in self.turns if ours in wanted]

    @classmethod
    def of_parent(
        cls, request: ForkSessionRequest, filename: str
    ) -> tuple[str, Branches, list[str]] | None:
        """For a fork: the parent's state directory, its marks and the turn ids the child
        keeps - ``None`` when the child keeps no marked turn (nothing of the CLI's
        conversation to carry: the child starts fresh)."""
        parent, kept = request.parent_state_dir, [turn.turn_id for turn in request.turns]
        if parent is None:
            return None
        marks = cls.load(parent, filename)
        return (parent, marks, kept) if marks.last_kept(kept) is not None else None

    def save_child(
        self, state_dir: str | Path, kept: Iterable[str], pending: Mapping[str, Any]
    ) -> None:
        """Save a fork's child's file (these being the parent's marks): the kept turns' marks
        and ``pending``, the fork its first turn makes."""
        wanted = set(kept)
        turns = [(ours, mark) for ours, mark in self.turns if ours in wanted]
        Branches(Path(state_dir) / self.path.name, turns, pending).save()

    @classmethod
    def rewound(
        cls,
        state_dir: str | Path,
        filename: str,
        kept: Iterable[str],
        pending: Callable[[Branches], Mapping[str, Any]],
    ) -> None:
        """A rewind to the turns ``kept``: when it drops a marked turn, ``pending(marks)``
        (read before the dropped marks go) joins the pending branch and the file is saved;
        otherwise the CLI's conversation already is the kept one and nothing changes."""
        branches = cls.load(state_dir, filename)
        kept = list(kept)
        if branches.first_dropped(kept) is None:
            return
        extra = pending(branches)
        branches.keep(kept)
        branches.pending = {**(branches.pending or {}), **extra}
        branches.save()
