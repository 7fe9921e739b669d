"""What every store shares: the gap-free sequence check done at append time, and the rule
for taking over a session's claim."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness_hookspecs import Event, HarnessError

from .owner import owner_alive


class SequenceGuard:
    """Refuses an append whose sequence is not exactly the session's last + 1."""

    def __init__(self, last_stored: Callable[[str], int]) -> None:
        self._last: dict[str, int] = {}
        self._last_stored = last_stored

    def check(self, events: Sequence[Event]) -> None:
        last = self._last
        if len(events) == 1:  # the controller appends one event at a time
            event = events[0]
            sid = event.session_id
            previous = last.get(sid)
            if previous is None:
                previous = self._last_stored(sid)
            if event.sequence != previous + 1:
                raise HarnessError("ledger-failed", "sequence gap or duplicate refused")
            last[sid] = event.sequence
            return
        staged: dict[str, int] = {}
        for event in events:
            sid = event.session_id
            previous = staged.get(sid)
            if previous is None:
                previous = last.get(sid)
                if previous is None:
                    previous = self._last_stored(sid)
            if event.sequence != previous + 1:
                raise HarnessError("ledger-failed", "sequence gap or duplicate refused")
            staged[sid] = event.sequence
        last.update(staged)

    def seed(self, session_id: str, last: int) -> None:
        """Record a session's last stored sequence when the store already knows it."""
        self._last.setdefault(session_id, last)

    def reset(self, session_id: str, last: int) -> None:
        """Take ``last`` as the session's last sequence (another writer may have appended)."""
        self._last[session_id] = last

    def last(self, session_id: str) -> int | None:
        return self._last.get(session_id)


#: Seconds an owner on another host keeps a claim without renewing it (same-host owners are
#: checked exactly: process id and start time).
LEASE = 60.0


def holder_alive(owner: str | None, renewed_at: float, now: float) -> bool:
    """Whether a recorded claim still holds: its owner process lives (or its lease runs)."""
    if not owner:
        return False
    alive = owner_alive(owner.rsplit("#", 1)[0])
    return alive if alive is not None else now - renewed_at < LEASE
