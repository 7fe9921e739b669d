"""What crosses Temporal: small serialisable records, never events, never credentials.

Workflow history holds only these (Temporal's JSON data converter encodes dataclasses): a
session's open parameters (harness config names paths and URLs; secrets are resolved on the
worker by the credentials plugins), turn prompts and ids, and turn summaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TASK_QUEUE = "harness-sessions"
NAMESPACE = "default"

#: Activity names (the workflow names them; the worker registers them).
OPEN_SESSION = "harness.open_session"
RUN_TURN = "harness.run_turn"
#: The local activity a turn starts with (see ``ExecutorOptions.local_start``).
START_TURN = "harness.start_turn"
CLOSE_SESSION = "harness.close_session"
#: Branching activities (:mod:`.branching`): run on a worker while no turn of the session runs.
FORK_SESSION = "harness.fork_session"
CHECKPOINT = "harness.checkpoint"
REWIND = "harness.rewind"

#: The approval updates: the worker asks (``PERMISSION_REQUESTED``, answered with the decision),
#: the host answers (``ANSWER_PERMISSION``). Their arguments are the contract's
#: ``PermissionRequest`` / ``PermissionDecision`` as the contract serialises them
#: (``request_to_dict`` / ``PermissionDecision.to_dict``): plain JSON any client can send.
PERMISSION_REQUESTED = "permission_requested"
ANSWER_PERMISSION = "answer_permission"
#: Turns a worker runs at once unless told (``--max-concurrent``): the CLI turns one machine
#: holds (each is a harness process tree).
DEFAULT_MAX_CONCURRENT = 10
#: Seconds a draining worker lets running turns finish before handing them over (``--grace``).
DEFAULT_GRACE = 30.0
#: Steering: the host's update ``STEER`` waits in the workflow until the worker running the
#: turn took it through its long-polling update ``NEXT_STEER`` (which carries the previous
#: steer's outcome back).
STEER = "steer"
NEXT_STEER = "next_steer"
#: Signal from the worker starting a retry: the lost attempt's pending requests are void.
ATTEMPT_STARTED = "attempt_started"

#: HarnessError reasons no retry can change (the request or the session is wrong).
NON_RETRYABLE = (
    "invalid-request",
    "session-closed",
    "session-not-found",
    "turn-active",
    "turn-not-found",
    "unsupported",
    "session-busy",
    "authentication-required",
)


@dataclass(frozen=True)
class SessionSpec:
    """How to open (and, on another worker, resume) a session."""

    harness: str
    workspace: str | None = None
    model: str | None = None
    posture: str = "auto"
    agent: str | None = None
    user: str | None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutorOptions:
    """Per-session execution settings (deterministic: they live in workflow history).

    Passed to the host's client, which sends them with each session it opens:
    ``TemporalController(client, ledger=..., options=ExecutorOptions(max_attempts=3))``
    (``from executor_temporal import ExecutorOptions, TemporalController``).
    """

    #: Attempts of one turn across worker losses (the first included).
    max_attempts: int = 2
    #: A worker silent this long is presumed lost; its turn is retried elsewhere.
    heartbeat_timeout: float = 5.0
    #: Upper bound of one turn activity (the turn's own deadline is ``turn_timeout``).
    turn_activity_timeout: float = 3600.0
    #: Each turn's deadline on the worker (``Controller.turn(timeout=...)``; ``None``: none).
    turn_timeout: float | None = None
    #: Continue-as-new after this many turns in one run (or when Temporal suggests it).
    turns_per_run: int = 200
    #: A permission request nobody answers within this is denied.
    approval_timeout: float = 300.0
    #: Seconds a turn nobody streams (``run_turn`` without ``on_event`` or a permission
    #: handler) first runs inside the workflow task that accepted it (a local activity on the
    #: worker that holds the session): a turn that ends within this costs no activity dispatch
    #: and one workflow task less; a longer one goes on as the ``run_turn`` activity on the
    #: same worker (sent to the task queue only that worker polls; heartbeats, failover,
    #: drain as before). Meanwhile the session's signals and updates (cancel, permission
    #: requests, steers) wait up to this long. 0: every turn is a ``run_turn`` activity.
    local_start: float = 0.25


@dataclass(frozen=True)
class SessionRefShape:
    provider: str
    target: str
    session_id: str


@dataclass(frozen=True)
class SessionStart:
    """The workflow's input; ``ref`` and ``turns`` carry over a continue-as-new."""

    session_id: str
    spec: SessionSpec
    options: ExecutorOptions = field(default_factory=ExecutorOptions)
    ref: SessionRefShape | None = None  # set once opened
    turns: int = 0


@dataclass(frozen=True)
class TurnRequest:
    turn_id: str
    prompt: str
    #: the caller follows the turn's events as they come (``TemporalController.turn``): it
    #: starts following once the update is accepted, which a turn started inside the
    #: workflow task (``ExecutorOptions.local_start``) would hold up, so it starts none there
    streamed: bool = False


@dataclass(frozen=True)
class TurnWork:
    """What the ``run_turn`` activity gets."""

    session_id: str
    spec: SessionSpec
    turn_id: str
    prompt: str
    turn_timeout: float | None = None
    #: the workflow's timer denies a permission request nobody answers within this
    approval_timeout: float = 300.0
    #: ``start_turn``: seconds to wait for the turn's end before ``run_turn`` follows it
    local_start: float = 0.0
    #: ``run_turn``: the host cancelled the turn before this activity was scheduled
    cancel: bool = False
    #: ``run_turn`` after the activity that followed the turn on its worker's own queue was
    #: lost: why (``worker-stopped``: the worker handed the turn over; else it vanished)
    after: str | None = None


@dataclass(frozen=True)
class TurnStart:
    """What ``start_turn`` answers: the turn's summary when it ended within the window; else
    ``running`` (it runs on in this worker: ``run_turn`` follows it on ``queue``, the task
    queue only this worker polls) or neither (not started here: ``run_turn`` runs it)."""

    summary: TurnSummary | None = None
    running: bool = False
    #: the worker's own task queue (``None`` in histories from before it had one)
    queue: str | None = None


@dataclass(frozen=True)
class TurnSummary:
    """What a turn returns through Temporal: never its events (they are in the ledger)."""

    turn_id: str
    status: str  # completed | failed | cancelled
    reason: str | None = None
    last_sequence: int = 0
    attempt: int = 1
    usage: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True)
class SteerRequest:
    """The host's steer: ``text`` for the running turn (``turn_id``: that turn, if named)."""

    text: str
    turn_id: str | None = None


@dataclass(frozen=True)
class SteerDone:
    """What became of a steer the worker took: ``reason`` is the refusal, ``None`` delivered."""

    steer_id: str
    reason: str | None = None
    hint: str | None = None


@dataclass(frozen=True)
class SteerPoll:
    """The worker's long poll for the next steer of ``turn_id``; ``steerable=False``: the
    session's harness has no ``steer`` (the workflow refuses every steer of the turn);
    ``final``: only ``done`` to report, the turn ended (answered at once)."""

    turn_id: str
    steerable: bool = True
    done: SteerDone | None = None
    final: bool = False


@dataclass(frozen=True)
class SteerWork:
    steer_id: str
    text: str


@dataclass(frozen=True)
class ForkRequest:
    """The host's fork: the child's id (the host's), the parent's event ``at`` (``None``: its
    last) and what the child changes of the parent's spec (``SessionSpec`` fields)."""

    child_id: str
    at: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ForkWork:
    """What the ``fork_session`` activity gets: the parent's start and the host's request."""

    parent: SessionStart
    request: ForkRequest


@dataclass(frozen=True)
class RewindWork:
    session: SessionStart
    checkpoint: str


@dataclass(frozen=True)
class RewindSummary:
    """A rewind as the ``session.rewound`` it recorded says it."""

    checkpoint_id: str
    conversation: bool
    turns_kept: int
    turn_id: str | None = None
