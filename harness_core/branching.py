"""Shape, branch, undo: steer, fork, checkpoint and rewind of a session.

- **steer** hands the host's text to the running turn through the harness's
  ``harness_steer_turn`` (feature ``steer``) and records ``turn.steered`` in the turn;
- **fork** opens a child session through ``harness_fork_session`` (feature ``fork``) whose
  conversation is the parent's up to an event, and records ``session.forked`` in both;
- **checkpoint** snapshots the workspace into the session's shadow git store
  (:mod:`.checkpoints`), for every harness, and records ``checkpoint.created``; with
  ``Controller(checkpoints=...)`` each turn is snapshotted at its start and end (the end's event
  lists the files the turn changed);
- **rewind** restores a checkpoint's files byte-exact and, where the harness claims
  ``checkpoint``, takes its conversation back with ``harness_rewind_session``; it records
  ``session.rewound`` and deletes nothing (the ledger is append-only: the rewind is a new
  branch point, and the state it left is itself a checkpoint).

The conversation a session has at any point is read from its ledger (:func:`conversation_at`):
the turns that ended, cut back by each ``session.rewound`` that took the conversation back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from harness_hookspecs import (
    CheckpointCreated,
    CheckpointSkipped,
    ConversationTurn,
    Event,
    HarnessError,
    LedgerStore,
    RewindSessionRequest,
    SessionRewound,
    SteerTurnRequest,
    TurnSteered,
    assert_supported,
)
from harness_hookspecs.events import CHANGES_MAX, SKIP_REASONS

from .branches import conversation_at
from .request_checks import safe_hint

if TYPE_CHECKING:
    from .checkpoints import CheckpointSettings, CheckpointStore
    from .turn import LiveSession, Turn

# (.checkpoints is imported where a checkpoint is taken or looked up: a run without
# checkpoints never needs it)

__all__ = ["Checkpoints", "conversation_at", "find_checkpoint", "steer"]


def find_checkpoint(events: Sequence[Event], checkpoint_id: str) -> Event:
    """The ``checkpoint.created`` event of ``checkpoint_id`` (or a unique prefix of it) among a
    session's events; ``invalid-request`` naming it when the session has none such."""
    from .checkpoints import CHECKPOINT_PREFIX

    wanted = checkpoint_id if checkpoint_id.startswith(CHECKPOINT_PREFIX) else ""
    found = [
        event
        for event in events
        if isinstance(event.payload, CheckpointCreated)
        and len(wanted) > len(CHECKPOINT_PREFIX) + 3
        and event.payload.checkpoint_id.startswith(wanted)
    ]
    ids = {event.payload.checkpoint_id for event in found}  # type: ignore[union-attr]
    if len(ids) != 1:
        shown = checkpoint_id[:60]
        raise HarnessError("invalid-request", f"{shown!r} is not a checkpoint of this session")
    return found[0]


async def steer(live: LiveSession, turn: Turn | None, text: str, call: Callable[..., Any]) -> None:
    """Hand ``text`` to the running ``turn`` of ``live`` and record ``turn.steered``."""
    if turn is None or turn.finished:
        raise HarnessError("turn-not-found", "no turn is running in this session")
    assert_supported(live.descriptor, live.ref.target, "steer")
    try:
        request = SteerTurnRequest(session=live.ref, turn_id=turn.turn_id, text=text)
    except (TypeError, ValueError) as error:
        raise HarnessError("invalid-request", safe_hint(error)) from None
    awaitable = call("harness_steer_turn", request=request, context=live.context)
    if awaitable is not None:
        await awaitable
    if turn.finished:  # the turn ended while the harness took the text: nothing steered
        raise HarnessError("turn-not-found", "the turn ended before the steer reached it")
    turn.record_runtime(TurnSteered(text=text))


class Checkpoints:
    """The controller's workspace checkpoints: one :class:`CheckpointStore` per session."""

    def __init__(
        self,
        settings: CheckpointSettings | None,
        state_root: Path,
        protected: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        #: ``None``: checkpoints only when asked, with the default settings
        self.settings = settings
        self.state_root = state_root
        #: the runtime's own files no snapshot takes and no rewind touches (the ledger...)
        self.protected = (state_root, *protected)
        self._stores: dict[str, CheckpointStore] = {}

    @property
    def on_turns(self) -> bool:
        return self.settings is not None and self.settings.on_turns

    def store(self, live: LiveSession) -> CheckpointStore:
        session_id = live.ref.session_id
        store = self._stores.get(session_id)
        if store is None:
            workspace = live.context.workspace
            if workspace is None:
                raise HarnessError("invalid-request", "the session has no workspace to checkpoint")
            from .checkpoints import CheckpointSettings, CheckpointStore, store_directory

            store = CheckpointStore(
                store_directory(self.state_root, session_id),
                workspace,
                self.settings or CheckpointSettings(),
                self.protected,
            )
            self._stores[session_id] = store
        return store

    def forget(self, session_id: str) -> None:
        self._stores.pop(session_id, None)

    async def create(
        self, live: LiveSession, reason: str = "host", turn_id: str | None = None
    ) -> str:
        """Snapshot the workspace and record ``checkpoint.created``; returns its id."""
        store = self.store(live)
        checkpoint_id = await anyio.to_thread.run_sync(store.snapshot, reason)
        live.recorder.record(None, CheckpointCreated(checkpoint_id, reason, turn_id))
        return checkpoint_id

    async def turn_start(self, live: LiveSession, turn_id: str) -> tuple[str | None, str | None]:
        """The checkpoint before turn ``turn_id``: its id, or (``None``) why the workspace could
        not be snapshotted - the turn runs all the same and says so in a ``status`` event."""
        if live.context.workspace is None:
            return None, None
        try:
            return await self.create(live, "turn-start", turn_id), None
        except HarnessError as error:
            return None, _skipped(error)

    async def turn_end(self, live: LiveSession, turn_id: str, start: str) -> None:
        """The checkpoint after turn ``turn_id``, listing the files it changed since ``start``;
        ``checkpoint.skipped`` with the reason when the workspace can no longer be snapshotted
        (``harness diff`` then has nothing for the turn)."""
        store = self.store(live)

        def snapshot() -> tuple[str, list[str]]:
            end = store.snapshot("turn-end")
            return end, store.changes(start, end)

        try:
            end, changes = await anyio.to_thread.run_sync(snapshot)
        except HarnessError as error:
            reason = error.reason if error.reason in SKIP_REASONS else "provider-failed"
            live.recorder.record(None, CheckpointSkipped(reason, "turn-end", turn_id))
            return
        kept = [line[:4200] for line in changes[:CHANGES_MAX]]
        live.recorder.record(
            None,
            CheckpointCreated(
                end, "turn-end", turn_id, tuple(kept), max(0, len(changes) - CHANGES_MAX)
            ),
        )

    async def rewind(
        self,
        live: LiveSession,
        checkpoint_id: str,
        events: Sequence[Event],
        call: Callable[..., Any],
        store_of_events: LedgerStore | None = None,
    ) -> SessionRewound:
        """Restore ``checkpoint_id`` (of this session: ``events`` are its ledger) and take
        the conversation back where the harness can; records ``session.rewound``."""
        if live.active is not None:
            raise HarnessError("turn-active")
        found = find_checkpoint(events, checkpoint_id)
        created = found.payload
        assert isinstance(created, CheckpointCreated)
        store = self.store(live)
        # The state the rewind leaves behind is a checkpoint too: a rewind can be undone.
        await self.create(live, "rewind")
        kept = conversation_at(store_of_events, events, found.sequence)
        conversation = "checkpoint" in live.descriptor.features
        rewound = SessionRewound(
            checkpoint_id=created.checkpoint_id,
            turn_id=created.turn_id,
            conversation=conversation,
            turns_kept=len(kept) if conversation else 0,
        )
        # The journal's note: what a controller resuming after a kill records (see recover).
        note = {
            "rewound": attrs.asdict(rewound),
            "at": found.sequence,
            "after": live.recorder.next_sequence - 1,
        }
        await anyio.to_thread.run_sync(store.restore, created.checkpoint_id, note)
        await self._finish(live, rewound, kept, call, store)
        return rewound

    async def _finish(
        self,
        live: LiveSession,
        rewound: SessionRewound,
        kept: Sequence[ConversationTurn],
        call: Callable[..., Any],
        store: CheckpointStore,
    ) -> None:
        """After the files: the harness's conversation (where it rewinds one), then
        ``session.rewound`` made durable, then the journal removed."""
        if rewound.conversation:
            request = RewindSessionRequest(
                session=live.ref,
                turns_kept=len(kept),
                turn_id=kept[-1].turn_id if kept else None,
                turns=tuple(kept),
            )
            awaitable = call("harness_rewind_session", request=request, context=live.context)
            if awaitable is not None:
                await awaitable
        live.recorder.record(None, rewound)
        await live.recorder.flush()
        await anyio.to_thread.run_sync(store.settle)

    async def recover(
        self, live: LiveSession, call: Callable[..., Any], ledger: LedgerStore
    ) -> SessionRewound | None:
        """Finish a rewind of ``live``'s session that a killed process left journaled (called
        when the session is resumed): the files restored, the conversation taken back and
        ``session.rewound`` recorded, unless the killed process recorded it already."""
        from .checkpoints import JOURNAL, store_directory

        session_id = live.ref.session_id
        journal = store_directory(self.state_root, session_id) / JOURNAL
        if live.context.workspace is None or not journal.exists():
            return None
        store = self.store(live)
        note = await anyio.to_thread.run_sync(store.unfinished)
        if note is None:
            return None  # a rewind without a note: the store finished it
        rewound = SessionRewound(**note["rewound"])
        events = await anyio.to_thread.run_sync(ledger.events, session_id)
        after = int(note["after"])
        if any(isinstance(e.payload, SessionRewound) and e.sequence > after for e in events):
            await anyio.to_thread.run_sync(store.settle)  # recorded before the kill
            return None
        kept = conversation_at(ledger, events, int(note["at"]))
        await self._finish(live, rewound, kept, call, store)
        return rewound


def _skipped(error: HarnessError) -> str:
    if error.reason == "limit-exceeded":
        return "checkpoint skipped: the workspace is over the checkpoint size limit"
    if error.reason == "timeout":
        return "checkpoint skipped: the snapshot took too long"
    return "checkpoint skipped: the workspace could not be snapshotted"
