"""The closed, versioned event union and its envelope.

Adapters yield *payloads* (``MessageDelta(text=...)``, ``ToolStarted(...)``...); the runtime stamps
each into an :class:`Event` envelope with a session-wide, gap-free ``sequence``. The union is
closed: :data:`PAYLOAD_TYPES` is the whole set, keyed by the ``type`` string stored in the ledger.

Status, tool and permission summaries must be adapter-authored safe summaries (1-240 characters,
no control characters). Model-authored text (messages, thinking, a turn's answer) keeps tab,
newline and CR; any other control character in it becomes U+FFFD where the event is built. Never put raw provider output, exception text or tool arguments there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal

import attrs
from attrs import field, frozen

from . import bounds as _bounds
from .errors import MESSAGES, REASONS
from .models import INSTRUCTIONS_MAX, PROTOCOL_VERSION, TARGETS, Usage
from .values import Value

_status = _bounds.bounded(1, _bounds.STATUS_MAX)
_opt_status = _bounds.optional_bounded(1, _bounds.STATUS_MAX)
_ident = _bounds.bounded(1, 256)
_text = _bounds.bounded(0, _bounds.TEXT_MAX, multiline=True)
_nonempty_text = _bounds.bounded(1, _bounds.TEXT_MAX, multiline=True)
# Model-authored text: control characters replaced by the converter, then only the length checked.
_printable = _bounds.printable_bounded(0, _bounds.TEXT_MAX)
_nonempty_printable = _bounds.printable_bounded(1, _bounds.TEXT_MAX)


def _in(choices: tuple[str, ...]) -> Any:
    """attrs' ``in_`` validator, its error included, with the accepted string found first by a
    set look-up (several events a turn run it)."""
    slow = attrs.validators.in_(choices)
    allowed = frozenset(choices)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if type(value) is not str or value not in allowed:
            slow(instance, attribute, value)

    return check


@frozen(repr=False, eq=False)
class SessionOpened(Value):
    TYPE: ClassVar[str] = "session.opened"
    provider: str = field(validator=_bounds.name)
    target: str = field(validator=_in(TARGETS))
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    posture: str = "auto"
    sandbox: str | None = None
    network: str | None = None
    #: the host's instructions for the harness (redacted like every string), if any
    instructions: str | None = field(
        default=None, validator=_bounds.optional_bounded(1, INSTRUCTIONS_MAX, multiline=True)
    )
    #: ``False``: the session keeps thinking text out of the ledger (counts only)
    record_thinking: bool = True
    #: the CLI's own id of the session, when the adapter knew it at open
    vendor_session_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    #: a child session's parent (delegation, ``run_agent``): the parent session and the event
    #: of it that started this one (its ``tool.started``); ``None`` for a top-level session
    parent_session_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    parent_event_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))

    @property
    def harness(self) -> str:
        """The harness's name (the ``provider`` field, read by its meaning)."""
        return self.provider


@frozen(repr=False, eq=False)
class SessionResumed(Value):
    TYPE: ClassVar[str] = "session.resumed"
    provider: str = field(validator=_bounds.name)
    target: str = field(validator=_in(TARGETS))
    #: the CLI's own id of the session, when the adapter knew it at resume
    vendor_session_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))

    @property
    def harness(self) -> str:
        """The harness's name (the ``provider`` field, read by its meaning)."""
        return self.provider


@frozen(repr=False, eq=False)
class SessionClosed(Value):
    TYPE: ClassVar[str] = "session.closed"


@frozen(repr=False, eq=False)
class TurnStarted(Value):
    TYPE: ClassVar[str] = "turn.started"
    prompt: str = field(validator=_nonempty_text)


@frozen(repr=False, eq=False)
class TurnRestarted(Value):
    """Runtime-authored: the turn is retried under its id (attempt 2, 3, ...) after an earlier
    attempt was abandoned without a terminal (its writer died or was fenced). What the earlier
    attempts streamed is superseded: readers keep only the last attempt's output."""

    TYPE: ClassVar[str] = "turn.restarted"
    attempt: int = field(
        validator=[attrs.validators.instance_of(int), attrs.validators.in_(range(2, 1_000_000))]
    )


@frozen(repr=False, eq=False)
class MessageDelta(Value):
    """A piece of streamed assistant text."""

    TYPE: ClassVar[str] = "message.delta"
    text: str = field(converter=_bounds.printable_text, validator=_nonempty_printable)


@frozen(repr=False, eq=False)
class MessageCompleted(Value):
    """A whole assistant (or user-visible) message."""

    TYPE: ClassVar[str] = "message.completed"
    text: str = field(converter=_bounds.printable_text, validator=_printable)
    role: str = field(default="assistant", validator=_in(("assistant", "user", "system")))


@frozen(repr=False, eq=False)
class ToolStarted(Value):
    TYPE: ClassVar[str] = "tool.started"
    call_id: str = field(validator=_ident)
    name: str = field(validator=_bounds.bounded(1, 128))
    summary: str | None = field(default=None, validator=_opt_status)


@frozen(repr=False, eq=False)
class ToolCompleted(Value):
    TYPE: ClassVar[str] = "tool.completed"
    call_id: str = field(validator=_ident)
    name: str = field(validator=_bounds.bounded(1, 128))
    ok: bool = True
    summary: str | None = field(default=None, validator=_opt_status)


@frozen(repr=False, eq=False)
class PermissionRequested(Value):
    TYPE: ClassVar[str] = "permission.requested"
    request_id: str = field(validator=_ident)
    summary: str = field(validator=_status)
    tool: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))


@frozen(repr=False, eq=False)
class PermissionResolved(Value):
    TYPE: ClassVar[str] = "permission.resolved"
    request_id: str = field(validator=_ident)
    decision: str = field(validator=_in(("allow", "deny")))
    source: str = field(default="host", validator=_in(("host", "policy", "timeout")))
    #: the approver's safe reason (a deny's explanation), if any
    reason: str | None = field(default=None, validator=_opt_status)
    #: the call runs with an input the approver edited
    edited: bool = False


@frozen(repr=False, eq=False)
class UsageReported(Value):
    """Usage as the provider reported it; emit only when reliable (absence = unknown).

    A turn may report several times (one per model request, or a running total the adapter
    turns into increments); the runtime sums them per turn and per session and checks the
    session budget on each.
    """

    TYPE: ClassVar[str] = "usage"
    #: the counts of this report (an increment, not a running total)
    usage: Usage


@frozen(repr=False, eq=False)
class Status(Value):
    """An adapter-authored progress summary."""

    TYPE: ClassVar[str] = "status"
    message: str = field(validator=_status)


@frozen(repr=False, eq=False)
class Artifact(Value):
    TYPE: ClassVar[str] = "artifact"
    name: str = field(validator=_bounds.bounded(1, 256))
    path: str | None = field(default=None, validator=_bounds.optional_bounded(1, 4096))
    media_type: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    size: int | None = field(default=None, validator=_bounds.non_negative_int)


@frozen(repr=False, eq=False)
class TurnCompleted(Value):
    """Terminal: the turn finished successfully.

    ``output``: the parsed, schema-valid final answer of a turn run with an ``output_schema``
    (a JSON value; ``None`` for a turn without one). An adapter with native structured output
    sets it; the runtime validates it (or parses ``text``) and records the accepted value here.
    """

    TYPE: ClassVar[str] = "turn.completed"
    text: str | None = field(
        default=None,
        converter=_bounds.printable_text,
        validator=attrs.validators.optional(_printable),
    )
    output: Any = field(default=None, validator=_bounds.json_value)


@frozen(repr=False, eq=False)
class TurnFailed(Value):
    """Terminal: the turn failed for a fixed reason; ``message`` is fixed by the reason."""

    TYPE: ClassVar[str] = "turn.failed"
    #: one of the contract's fixed ``REASONS`` (``timeout``, ``limit-exceeded``,
    #: ``provider-failed``, ``invalid-output``, ...)
    reason: str = field(validator=_in(REASONS))
    #: the reason's fixed sentence (``MESSAGES[reason]``, set by the class whatever is passed)
    message: str = ""
    #: an optional safe, one-line detail authored by the adapter or the runtime (1-240
    #: characters, no control characters): which limit, which schema keyword, which exception
    #: class - never provider output or exception text
    hint: str | None = field(default=None, validator=_opt_status)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "message", MESSAGES[self.reason])


@frozen(repr=False, eq=False)
class TurnCancelled(Value):
    """Terminal: the turn was cancelled (by the host or the harness)."""

    TYPE: ClassVar[str] = "turn.cancelled"
    by: str = field(default="host", validator=_in(("host", "harness", "close")))


@frozen(repr=False, eq=False)
class TurnSteered(Value):
    """Runtime-authored: the host's ``text`` was handed to the running turn (``steer``); the
    harness delivers it to the model before its next request in this turn."""

    TYPE: ClassVar[str] = "turn.steered"
    text: str = field(validator=_nonempty_text)


@frozen(repr=False, eq=False)
class SessionForked(Value):
    """Runtime-authored, in both sessions of a fork: the child ``child_session_id`` continues
    ``parent_session_id``'s conversation up to its event ``at_event_id`` (``turns`` turns)."""

    TYPE: ClassVar[str] = "session.forked"
    parent_session_id: str = field(validator=_ident)
    child_session_id: str = field(validator=_ident)
    at_event_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    turns: int = field(default=0, validator=_bounds.non_negative_int)


def _changes(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or len(value) > CHANGES_MAX:
        raise ValueError(f"{attribute.name} must be a tuple of at most {CHANGES_MAX} lines")
    for line in value:
        if not isinstance(line, str) or not 1 <= len(line) <= 4200 or "\n" in line:
            raise ValueError(f"{attribute.name} holds lines of 1-4200 characters")


def _lines(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


#: How many changed files a ``checkpoint.created`` lists (``changes_omitted`` counts the rest).
CHANGES_MAX = 500


@frozen(repr=False, eq=False)
class CheckpointCreated(Value):
    """Runtime-authored: the workspace was snapshotted into the session's checkpoint store
    (a shadow git repository outside the workspace) as ``checkpoint_id``.

    ``reason``: ``turn-start`` (before turn ``turn_id`` ran), ``turn-end`` (after it: then
    ``changes`` lists the files the turn changed), ``host`` (asked for) or ``rewind`` (the state
    a rewind left behind, so the rewind itself can be undone). ``changes`` are git ``--numstat``
    lines, ``"<added>\t<removed>\t<path>"`` (``-`` for a binary file's counts); the full diff
    stays in the store (``harness diff``), never in the ledger."""

    TYPE: ClassVar[str] = "checkpoint.created"
    checkpoint_id: str = field(validator=_ident)
    reason: str = field(validator=_in(("turn-start", "turn-end", "host", "rewind")))
    turn_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    changes: tuple[str, ...] = field(default=(), converter=_lines, validator=_changes)
    changes_omitted: int = field(default=0, validator=_bounds.non_negative_int)


#: The fixed reasons a snapshot is skipped for (``checkpoint.skipped``).
SKIP_REASONS = ("limit-exceeded", "timeout", "provider-failed", "provider-unavailable")


@frozen(repr=False, eq=False)
class CheckpointSkipped(Value):
    """Runtime-authored: the workspace could not be snapshotted at the end of turn ``turn_id``
    (``at``: ``turn-end``; a turn-start skip is a ``status`` inside its turn) for a fixed
    ``reason``: over the size limit, too slow, git failed or missing. ``harness diff`` then has
    no changes for that turn; the turn itself ran."""

    TYPE: ClassVar[str] = "checkpoint.skipped"
    reason: str = field(validator=_in(SKIP_REASONS))
    at: str = field(default="turn-end", validator=_in(("turn-end",)))
    turn_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))


@frozen(repr=False, eq=False)
class SessionRewound(Value):
    """Runtime-authored: the session went back to ``checkpoint_id`` (taken before turn
    ``turn_id``, or on demand): the workspace restored byte-exact, and - ``conversation`` -
    the harness's conversation taken back to the turns before it. Nothing is deleted from the
    ledger: later turns stay recorded, this event is the new branch point."""

    TYPE: ClassVar[str] = "session.rewound"
    checkpoint_id: str = field(validator=_ident)
    turn_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    conversation: bool = False
    #: the turns the conversation keeps (when ``conversation``)
    turns_kept: int = field(default=0, validator=_bounds.non_negative_int)


@frozen(repr=False, eq=False)
class ThinkingDelta(Value):
    """A piece of the model's streamed reasoning ("thinking"), as the CLI reports it:
    redacted like a message, bounded like a delta. Kept out of the ledger when the session
    was opened with ``record_thinking=False`` (only :class:`ThinkingCompleted`'s count stays)."""

    TYPE: ClassVar[str] = "thinking.delta"
    text: str = field(converter=_bounds.printable_text, validator=_nonempty_printable)


@frozen(repr=False, eq=False)
class ThinkingCompleted(Value):
    """A whole block of the model's reasoning. ``text`` is ``None`` in a session that keeps
    thinking out of the ledger (``record_thinking=False``); ``characters`` is the block's
    length either way (set by the runtime)."""

    TYPE: ClassVar[str] = "thinking.completed"
    text: str | None = field(
        default=None,
        converter=_bounds.printable_text,
        validator=attrs.validators.optional(_printable),
    )
    characters: int | None = field(default=None, validator=_bounds.non_negative_int)


@frozen(repr=False, eq=False)
class ModelRequested(Value):
    """One model call of the turn began (the CLI reported the boundary: a new API message,
    a new step). ``model``: the model the CLI named for it, if it did."""

    TYPE: ClassVar[str] = "model.requested"
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))


@frozen(repr=False, eq=False)
class ModelCompleted(Value):
    """The model call opened by the last ``model.requested`` ended: its own ``usage`` (this
    step's counts; the turn's ``usage`` events are the sum of its steps) and ``duration_ms``
    (from the request to the last byte, as the adapter measured it). Informational: budgets
    count the ``usage`` events, never these."""

    TYPE: ClassVar[str] = "model.completed"
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    usage: Usage | None = None
    duration_ms: int | None = field(default=None, validator=_bounds.non_negative_int)


@frozen(repr=False, eq=False)
class OutputValidated(Value):
    """Runtime-authored, in a turn run with an ``output_schema``: one answer's verdict.
    ``attempt`` counts answers from 1; ``reason`` is the runtime's fixed, bounded account of a
    failed answer ("the answer is not JSON", "enum at $.step") - never the answer's text."""

    TYPE: ClassVar[str] = "output.validated"
    attempt: int = field(
        validator=[attrs.validators.instance_of(int), attrs.validators.in_(range(1, 1_000_000))]
    )
    verdict: str = field(validator=_in(("passed", "failed")))
    reason: str | None = field(default=None, validator=_opt_status)


Payload = (
    SessionOpened
    | SessionResumed
    | SessionClosed
    | TurnStarted
    | TurnRestarted
    | MessageDelta
    | MessageCompleted
    | ToolStarted
    | ToolCompleted
    | PermissionRequested
    | PermissionResolved
    | UsageReported
    | Status
    | Artifact
    | TurnCompleted
    | TurnFailed
    | TurnCancelled
    | TurnSteered
    | SessionForked
    | CheckpointCreated
    | CheckpointSkipped
    | SessionRewound
    | ThinkingDelta
    | ThinkingCompleted
    | ModelRequested
    | ModelCompleted
    | OutputValidated
)

#: The closed union: event ``type`` -> payload class.
PAYLOAD_TYPES: Mapping[str, type[Any]] = {
    cls.TYPE: cls
    for cls in (
        SessionOpened,
        SessionResumed,
        SessionClosed,
        TurnStarted,
        TurnRestarted,
        MessageDelta,
        MessageCompleted,
        ToolStarted,
        ToolCompleted,
        PermissionRequested,
        PermissionResolved,
        UsageReported,
        Status,
        Artifact,
        TurnCompleted,
        TurnFailed,
        TurnCancelled,
        TurnSteered,
        SessionForked,
        CheckpointCreated,
        CheckpointSkipped,
        SessionRewound,
        ThinkingDelta,
        ThinkingCompleted,
        ModelRequested,
        ModelCompleted,
        OutputValidated,
    )
}
EVENT_TYPES: frozenset[str] = frozenset(PAYLOAD_TYPES)
TERMINAL_TYPES: frozenset[str] = frozenset(
    {TurnCompleted.TYPE, TurnFailed.TYPE, TurnCancelled.TYPE}
)
#: Payloads an adapter may yield from ``run_turn``; the runtime authors the rest.
ADAPTER_TYPES: frozenset[str] = EVENT_TYPES - {
    SessionOpened.TYPE,
    SessionResumed.TYPE,
    SessionClosed.TYPE,
    TurnStarted.TYPE,
    TurnRestarted.TYPE,
    TurnSteered.TYPE,
    SessionForked.TYPE,
    CheckpointCreated.TYPE,
    CheckpointSkipped.TYPE,
    SessionRewound.TYPE,
    OutputValidated.TYPE,
}

EventType = Literal[
    "session.opened",
    "session.resumed",
    "session.closed",
    "turn.started",
    "turn.restarted",
    "message.delta",
    "message.completed",
    "tool.started",
    "tool.completed",
    "permission.requested",
    "permission.resolved",
    "usage",
    "status",
    "artifact",
    "turn.completed",
    "turn.failed",
    "turn.cancelled",
    "turn.steered",
    "session.forked",
    "checkpoint.created",
    "checkpoint.skipped",
    "session.rewound",
    "thinking.delta",
    "thinking.completed",
    "model.requested",
    "model.completed",
    "output.validated",
]


def make_payload(event_type: str, fields: Mapping[str, Any]) -> Payload:
    """Build a payload from provider-shaped data, projecting out fields the type doesn't have.

    Raises ``ValueError`` for an unknown type (the union is closed) or an out-of-bounds field.
    """
    cls = PAYLOAD_TYPES.get(event_type)
    if cls is None:
        raise ValueError(f"unknown event type: {event_type!r}")
    known = {a.name for a in attrs.fields(cls)}
    kept = {k: v for k, v in fields.items() if k in known}
    if cls in (UsageReported, ModelCompleted) and isinstance(kept.get("usage"), Mapping):
        usage_known = {a.name for a in attrs.fields(Usage)}
        kept["usage"] = Usage(**{k: v for k, v in kept["usage"].items() if k in usage_known})
    result: Payload = cls(**kept)
    return result


@frozen(repr=False, eq=False)
class Event(Value):
    """The envelope every stored and streamed event carries.

    ``sequence`` is session-wide and gap-free starting at 1; ``turn_id`` is ``None`` for session
    events. The runtime constructs envelopes (trusted), so only payloads are validated.
    """

    event_id: str
    sequence: int
    session_id: str
    turn_id: str | None
    harness: str
    timestamp: str
    type: str
    payload: Payload
    parent_event_id: str | None = None
    protocol_version: int = PROTOCOL_VERSION

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_TYPES
