"""A session's conversation read from the ledger, across forks and rewinds.

The turns a conversation holds at an event: a fork's parent's turns up to its fork point first
(``session.forked`` in the child), then each of the session's turns that ended, cut back by each
``session.rewound`` that took the conversation back. What a fork hands its child, what a rewind
keeps, and what a resumed harness replays (:func:`harness_core.transcript.transcript`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_hookspecs import ConversationTurn, Event, LedgerStore, SessionForked, SessionRewound
from harness_hookspecs.events import TERMINAL_TYPES, TurnCompleted, TurnStarted

__all__ = ["MAX_FORK_DEPTH", "conversation_at"]


def conversation_at(
    store: LedgerStore | None, events: Sequence[Event], until: int | None = None, depth: int = 0
) -> list[ConversationTurn]:
    """The turns a session's conversation holds after its event ``until`` (a sequence number;
    ``None``: all): a fork's parent's turns up to its fork point first (read from ``store``),
    then each turn that ended, cut back by each rewind of the conversation."""
    turns: list[ConversationTurn] = []
    prompts: dict[str, str] = {}
    for event in events:
        if until is not None and event.sequence > until:
            break
        payload = event.payload
        if isinstance(payload, TurnStarted) and event.turn_id is not None:
            prompts[event.turn_id] = payload.prompt
        elif event.type in TERMINAL_TYPES and event.turn_id in prompts:
            answer = payload.text if isinstance(payload, TurnCompleted) else None
            turns.append(ConversationTurn(event.turn_id, prompts.pop(event.turn_id), answer))
        elif isinstance(payload, SessionRewound) and payload.conversation:
            del turns[payload.turns_kept :]
        elif (
            isinstance(payload, SessionForked)
            and payload.child_session_id == event.session_id
            and store is not None
            and depth < MAX_FORK_DEPTH
        ):
            parent = store.events(payload.parent_session_id)
            point = next((e.sequence for e in parent if e.event_id == payload.at_event_id), 0)
            turns = conversation_at(store, parent, point, depth + 1)
    return turns


#: How many forks deep a conversation is followed back (a longer chain keeps its last links).
MAX_FORK_DEPTH = 32
