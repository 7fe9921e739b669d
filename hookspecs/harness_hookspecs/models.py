"""Frozen request/response models of the contract.

Validators run at construction (the boundary); converters are kept to the few places where a
friendlier input type is accepted (a list of features becomes a frozenset, a path becomes a str).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, get_args, overload

import attrs
from attrs import field, frozen

from . import bounds as _bounds
from .errors import HarnessError
from .values import Value

PROTOCOL_VERSION = 1

Target = Literal["local", "cloud"]
TARGETS: tuple[str, ...] = get_args(Target)

Feature = Literal[
    "resume",
    "cancel",
    "usage",
    "mcp",
    "permissions",
    "fork",
    "steer",
    "checkpoint",
    # the adapter hands `RunTurnRequest.output_schema` to the CLI's native mechanism
    "structured-output",
    # the adapter delivers the session's `instructions` through the CLI's own system-prompt
    # mechanism (without it the runtime puts them before the session's first prompt)
    "instructions",
]
FEATURES: tuple[str, ...] = get_args(Feature)

Posture = Literal["strict", "auto", "dangerous"]
POSTURES: tuple[str, ...] = get_args(Posture)

WorkspaceScope = Literal["run", "agent", "agent-user"]
WORKSPACE_SCOPES: tuple[str, ...] = get_args(WorkspaceScope)

Concurrency = Literal["queue", "fail", "fork"]
CONCURRENCY_POLICIES: tuple[str, ...] = get_args(Concurrency)

NetworkPolicy = Literal["none", "mcp-only", "allowlist", "open"]
NETWORK_POLICIES: tuple[str, ...] = get_args(NetworkPolicy)

SandboxOutcome = Literal["success", "failure", "cancelled"]
SANDBOX_OUTCOMES: tuple[str, ...] = get_args(SandboxOutcome)

SessionStatus = Literal["open", "closed"]


def _one_of(choices: tuple[str, ...]) -> Any:
    allowed = frozenset(choices)  # a set look-up for the (usual) string case

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if type(value) is str and value in allowed:
            return
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")

    return check


def _subset_of(choices: tuple[str, ...]) -> Any:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: frozenset[str]) -> None:
        unknown = sorted(set(value) - set(choices))
        if unknown:
            raise ValueError(f"{attribute.name} has unknown values: {', '.join(unknown)}")

    return check


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:  # most requests bring none: one shared empty (read-only) mapping
        return _EMPTY_MAPPING
    return MappingProxyType(dict(value))


_EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})


def _optional_path(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.fspath(value)


def _frozen_strs(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _str_tuple(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(str(v) for v in value)


@frozen(repr=False, eq=False)
class HarnessDescriptor(Value):
    """What a harness is and what it actually supports (not what it would like to)."""

    provider: str = field(validator=_bounds.name)
    targets: frozenset[str] = field(converter=_frozen_strs, validator=_subset_of(TARGETS))
    features: frozenset[str] = field(
        converter=_frozen_strs, factory=frozenset, validator=_subset_of(FEATURES)
    )
    version: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    #: The model vendor whose credentials the harness needs (``anthropic``, ``openai``...).
    vendor: str | None = field(default=None, validator=_bounds.optional_bounded(1, 64))
    display_name: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    #: Adapter-authored facts such as the detected CLI version or permission modes.
    details: Mapping[str, str] = field(converter=_frozen_mapping, factory=dict)
    protocol_version: int = PROTOCOL_VERSION
    #: The harness's own session config as a JSON Schema object (``properties``; unknown keys
    #: are refused unless it says ``additionalProperties``). The runtime adds its own keys
    #: (``command_policy``, ``mcp_loopback``) and validates every config against the result at
    #: open and resume (``invalid-request`` naming the key). ``None``: the harness declares
    #: nothing, so its keys go unchecked (only the runtime's keys are typed).
    config_schema: Mapping[str, Any] | None = field(default=None)

    @config_schema.validator
    def _config_schema_is_object(
        self, attribute: attrs.Attribute[Any], value: Mapping[str, Any] | None
    ) -> None:
        if value is not None and not isinstance(value.get("properties", {}), Mapping):
            raise ValueError("config_schema's properties must be a mapping")

    @property
    def harness(self) -> str:
        """The harness's registered name (the ``provider`` field, read by its meaning)."""
        return self.provider

    @targets.validator
    def _targets_not_empty(self, attribute: attrs.Attribute[Any], value: frozenset[str]) -> None:
        if not value:
            raise ValueError("targets must not be empty")


def assert_supported(
    descriptor: HarnessDescriptor, target: str, feature: str | None = None
) -> None:
    """Raise ``unsupported-target``/``unsupported-feature`` unless the descriptor claims support.

    Negotiation is not authorisation: adapters still check requests themselves.
    """
    if target not in descriptor.targets:
        raise HarnessError("unsupported-target", f"{descriptor.provider} has no {target} target")
    if feature is not None and feature not in descriptor.features:
        raise HarnessError(
            "unsupported-feature", f"{descriptor.provider} does not support {feature}"
        )


@frozen(init=False, repr=False, eq=False)
class SessionRef(Value):
    """The complete reference to a session; ``session_id`` is opaque and preserved verbatim.

    ``provider`` is the harness's registered name; read it as :attr:`harness` and construct with
    ``harness=`` in new code (``provider`` stays accepted, and is the serialised key until the
    next protocol version: see docs/architecture.md, "Names").
    """

    provider: str = field(validator=_bounds.name)
    target: str = field(validator=_one_of(TARGETS))
    session_id: str = field(validator=_bounds.bounded(1, _bounds.SESSION_ID_MAX))

    @overload
    def __init__(self, provider: str, target: str, session_id: str) -> None: ...

    @overload
    def __init__(self, *, harness: str, target: str, session_id: str) -> None: ...

    def __init__(
        self,
        provider: str | None = None,
        target: str | None = None,
        session_id: str | None = None,
        *,
        harness: str | None = None,
    ) -> None:
        name = harness if provider is None else provider
        if name is None or (provider is not None and harness is not None):
            raise TypeError("SessionRef needs exactly one of harness= and provider=")
        if target is None or session_id is None:
            raise TypeError("SessionRef needs target and session_id")
        self.__attrs_init__(name, target, session_id)

    @property
    def harness(self) -> str:
        """The name of the harness the session belongs to."""
        return self.provider


def _workspace_for_local(instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and (not value or "\x00" in value):
        raise ValueError("workspace must be a non-empty path")
    if getattr(instance, "target", None) == "local" and value is None:
        raise ValueError("a local session needs an explicit workspace")


@frozen(repr=False, eq=False)
class SandboxSpec(Value):
    """Where and how the harness process runs; resolved by a sandbox provider."""

    provider: str | None = field(default=None, validator=attrs.validators.optional(_bounds.name))
    scope: str = field(default="run", validator=_one_of(WORKSPACE_SCOPES))
    concurrency: str = field(default="queue", validator=_one_of(CONCURRENCY_POLICIES))
    network: str = field(default="open", validator=_one_of(NETWORK_POLICIES))
    #: ``host:port`` pairs reachable under the ``allowlist``/``mcp-only`` policies.
    allow: tuple[str, ...] = field(converter=_str_tuple, factory=tuple)
    config: Mapping[str, Any] = field(converter=_frozen_mapping, factory=dict)


#: The spec of a request that names none (frozen: one instance serves them all).
_DEFAULT_SANDBOX = SandboxSpec()


#: The longest host ``instructions`` a session takes (characters).
INSTRUCTIONS_MAX = 32_768
_instructions = _bounds.optional_bounded(1, INSTRUCTIONS_MAX, multiline=True)


@frozen(repr=False, eq=False)
class OpenSessionRequest(Value):
    """Ask a harness for a new session. A ``local`` session requires an explicit workspace."""

    harness: str = field(validator=_bounds.name)
    target: str = field(default="local", validator=_one_of(TARGETS))
    workspace: str | None = field(
        default=None, converter=_optional_path, validator=_workspace_for_local
    )
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    posture: str = field(default="auto", validator=_one_of(POSTURES))
    sandbox: SandboxSpec = field(default=_DEFAULT_SANDBOX)
    #: Who the session runs for; keys durable workspaces and credential grants.
    agent: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    user: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    config: Mapping[str, Any] = field(converter=_frozen_mapping, factory=dict)
    #: The host's instructions for the harness (seed 004's prompt appendix), at most
    #: ``INSTRUCTIONS_MAX`` characters: delivered through the CLI's own system-prompt mechanism
    #: where it has one, else put before the first prompt (``describe`` says which); recorded,
    #: redacted, in ``session.opened``.
    instructions: str | None = field(default=None, validator=_instructions)
    #: ``False``: the model's thinking is kept out of the ledger (``thinking.completed`` keeps
    #: only its length; no ``thinking.delta`` is recorded).
    record_thinking: bool = field(default=True, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if self.posture == "dangerous" and self.sandbox.network == "open":
            raise ValueError("the dangerous posture is refused with network policy open")


@frozen(repr=False, eq=False)
class ResumeSessionRequest(Value):
    """Reattach to a session from its complete reference."""

    session: SessionRef
    workspace: str | None = field(default=None, converter=_optional_path)
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    posture: str = field(default="auto", validator=_one_of(POSTURES))
    sandbox: SandboxSpec = field(default=_DEFAULT_SANDBOX)
    agent: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    user: str | None = field(default=None, validator=_bounds.optional_bounded(1, 128))
    config: Mapping[str, Any] = field(converter=_frozen_mapping, factory=dict)
    #: as :class:`OpenSessionRequest`'s (the controller fills both from ``session.opened``)
    instructions: str | None = field(default=None, validator=_instructions)
    record_thinking: bool = field(default=True, validator=attrs.validators.instance_of(bool))

    @property
    def harness(self) -> str:
        return self.session.provider

    @property
    def target(self) -> str:
        return self.session.target

    def __attrs_post_init__(self) -> None:
        if self.session.target == "local" and self.workspace is None:
            raise ValueError("a local session needs an explicit workspace")
        if self.workspace is not None and (not self.workspace or "\x00" in self.workspace):
            raise ValueError("workspace must be a non-empty path")
        if self.posture == "dangerous" and self.sandbox.network == "open":
            raise ValueError("the dangerous posture is refused with network policy open")


@frozen(repr=False, eq=False)
class RunTurnRequest(Value):
    """Run one turn; ``turn_id`` is assigned by the controller and opaque to the adapter.

    ``output_schema``: a JSON Schema the turn's final answer must match (structured output). An
    adapter whose CLI has a native mechanism hands it over and reports the parsed value as
    ``TurnCompleted.output``; others may ignore it (the runtime asks for JSON in the prompt and
    validates the text). The runtime validates every answer either way.
    """

    session: SessionRef
    turn_id: str = field(validator=_bounds.bounded(1, _bounds.TURN_ID_MAX))
    prompt: str = field(validator=_bounds.bounded(1, _bounds.TEXT_MAX, multiline=True))
    output_schema: Mapping[str, Any] | None = field(default=None, validator=_bounds.json_object)


@frozen(repr=False, eq=False)
class CancelTurnRequest(Value):
    session: SessionRef
    turn_id: str = field(validator=_bounds.bounded(1, _bounds.TURN_ID_MAX))


@frozen(repr=False, eq=False)
class CloseSessionRequest(Value):
    session: SessionRef


@frozen(repr=False, eq=False)
class SteerTurnRequest(Value):
    """Add the host's ``text`` to the running turn ``turn_id`` (feature ``steer``): the harness
    delivers it to the model inside the same turn (before its next model request)."""

    session: SessionRef
    turn_id: str = field(validator=_bounds.bounded(1, _bounds.TURN_ID_MAX))
    text: str = field(validator=_bounds.bounded(1, _bounds.TEXT_MAX, multiline=True))


@frozen(repr=False, eq=False)
class ConversationTurn(Value):
    """One turn of a conversation a fork or a rewind keeps (its input and final answer)."""

    turn_id: str = field(validator=_bounds.bounded(1, _bounds.TURN_ID_MAX))
    prompt: str = field(validator=_bounds.bounded(1, _bounds.TEXT_MAX, multiline=True))
    answer: str | None = None


def _turns(value: Iterable[ConversationTurn]) -> tuple[ConversationTurn, ...]:
    return tuple(value)


@frozen(repr=False, eq=False)
class ForkSessionRequest(Value):
    """Open a child session that continues ``parent``'s conversation up to a point (feature
    ``fork``): the child's context holds ``turns`` (the parent's turns up to the fork point, in
    order) and nothing after. ``parent_state_dir`` is the parent's adapter state (native ids);
    ``open`` is the child's own open request (same harness, workspace, posture...)."""

    parent: SessionRef
    open: OpenSessionRequest
    turns: tuple[ConversationTurn, ...] = field(converter=_turns, default=())
    #: the parent's last event the child keeps (its fork point)
    at_event_id: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    parent_state_dir: str | None = None

    @property
    def harness(self) -> str:
        return self.parent.provider


@frozen(repr=False, eq=False)
class RewindSessionRequest(Value):
    """Take the conversation back to the end of the turn ``turn_id`` (its ``turns_kept``-th
    turn; ``None`` and 0: before the first), feature ``checkpoint``: the next turn's model
    request lacks every later turn. The workspace is restored by the runtime, not here."""

    session: SessionRef
    turns_kept: int = field(validator=_bounds.non_negative_int)
    turn_id: str | None = field(
        default=None, validator=_bounds.optional_bounded(1, _bounds.TURN_ID_MAX)
    )
    #: the turns kept, oldest first (``len(turns) == turns_kept``)
    turns: tuple[ConversationTurn, ...] = field(converter=_turns, default=())


@frozen(repr=False, eq=False)
class Usage(Value):
    """Provider-reported usage. ``None`` means unknown, never zero.

    What a ``usage`` event carries, and what ``TurnResult.usage`` / ``session_usage`` sum (a
    field stays ``None`` while no report knew it). Counts are non-negative safe integers,
    the cost a non-negative finite number.
    """

    #: tokens sent to the model (prompt), cache reads and writes included where the vendor
    #: counts them so
    input_tokens: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: tokens the model generated
    output_tokens: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: input tokens served from the vendor's prompt cache
    cache_read_tokens: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: input tokens written to the vendor's prompt cache
    cache_write_tokens: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: output tokens spent on reasoning
    reasoning_tokens: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: model requests (API calls) the turn made
    requests: int | None = field(default=None, validator=_bounds.non_negative_int)
    #: cost in US dollars, as the harness reported or estimated it
    cost_usd: float | None = field(default=None, validator=_bounds.non_negative_number)
    #: ``cost_usd`` is the runtime's estimate from a price table (the provider reported
    #: tokens, not cost), not the provider's own figure
    cost_estimated: bool = field(default=False, validator=attrs.validators.instance_of(bool))


@frozen(repr=False, eq=False)
class SandboxRequest(Value):
    """Sent to ``sandbox_provision`` when a session opens or resumes."""

    session_id: str = field(validator=_bounds.bounded(1, _bounds.SESSION_ID_MAX))
    harness: str = field(validator=_bounds.name)
    workspace: str | None
    spec: SandboxSpec
    agent: str | None = None
    user: str | None = None
    posture: str = field(default="auto", validator=_one_of(POSTURES))
    #: The adapter's durable per-session directory (``SessionContext.state_dir``), already
    #: created on the host; a sandbox must keep it writable at the same path.
    state_dir: str | None = None


@frozen(repr=False, eq=False)
class SandboxHandle(Value):
    """How to run a process in a provisioned sandbox; adapters never build this themselves."""

    provider: str = field(validator=_bounds.name)
    workspace: str | None
    #: argv prefix the runtime puts before every spawned command (empty = run directly).
    command_prefix: tuple[str, ...] = field(converter=_str_tuple, factory=tuple)
    #: extra environment for spawned processes (not secrets: those come from credentials).
    env: Mapping[str, str] = field(converter=_frozen_mapping, factory=dict)
    #: provider-private state needed by finalize (a lock, a proxy, a temp dir...).
    state: Any = field(default=None, eq=False, repr=False)


CredentialPurpose = Literal["harness-llm", "integration"]
CREDENTIAL_PURPOSES: tuple[str, ...] = get_args(CredentialPurpose)


@frozen(repr=False, eq=False)
class CredentialRequest(Value):
    """Sent to ``credentials_resolve`` once, when a session opens or resumes."""

    harness: str = field(validator=_bounds.name)
    vendor: str | None = None
    agent: str | None = None
    user: str | None = None
    purposes: tuple[str, ...] = field(converter=_str_tuple, default=("harness-llm", "integration"))


@frozen(repr=False, eq=False)
class Credential(Value):
    """One secret to inject as an environment variable. The value never appears in reprs."""

    env_var: str = field(validator=_bounds.bounded(1, 128))
    value: str = field(repr=False)
    purpose: str = field(default="harness-llm", validator=_one_of(CREDENTIAL_PURPOSES))
    #: set for an agent-level grant; ``None`` for a vendor-scoped fallback
    agent: str | None = None
    vendor: str | None = None
    priority: int = 0
    source: str = field(default="unknown", validator=_bounds.bounded(1, 64))


@frozen(repr=False, eq=False)
class SessionRecord(Value):
    """What a ledger stores about a session (the events are stored separately)."""

    ref: SessionRef
    status: str = field(default="open", validator=_one_of(("open", "closed")))
    created_at: str = ""
    updated_at: str = ""
    workspace: str | None = None
    model: str | None = None
    posture: str = "auto"
    agent: str | None = None
    user: str | None = None
    #: The session's config as opened, what a resume (or a close) in another process needs
    #: again; a value that is a secret is stored as a reference (``{"$secret": "env:NAME"}``)
    #: and resolved again, never as its plaintext.
    config: Mapping[str, Any] = field(converter=_frozen_mapping, factory=dict)
    #: a child session's parent (opened by delegation, ``run_agent``): the parent session's
    #: id and the parent's event that started it; ``None`` for a top-level session
    parent_session_id: str | None = None
    parent_event_id: str | None = None
    #: the CLI's own id of the session (a Codex thread id...), as its adapter reported it;
    #: ``None`` while unknown
    vendor_session_id: str | None = None
    #: loaded from a bundle (``harness import``): its workspace, config and posture are the
    #: bundle's words, never the authority to run anything - it is stored closed, and a fork
    #: of it takes a workspace of its own and neither the config nor the posture
    imported: bool = False

    @property
    def session_id(self) -> str:
        return self.ref.session_id


def _mapping_copy(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@frozen(repr=False, eq=False)
class ConformanceProfile(Value):
    """How the conformance kit should drive one harness (the ``conformance_profile`` hook's answer).

    - ``prompt``: an ordinary prompt whose turn ends ``turn.completed`` (used for every ordinary
      turn: two in one session, one more after resume);
    - ``slow_prompt``: a prompt whose turn keeps running (for seconds) so the kit can cancel it
      while the adapter is busy; ``None`` makes the kit hold an ordinary turn open itself after
      the adapter's first event and cancel it there;
    - ``model``, ``config``: passed in the open/resume request;
    - ``env``: set in the host environment for the duration of the run (a fake server's base
      URL, a CLI's config directory...) and restored afterwards;
    - ``target``: the target the kit opens sessions on;
    - ``turn_timeout``: the per-turn deadline (``None``: the kit's ``timeout`` argument);
    - ``cancel_after``: seconds the kit waits, once the adapter is running the slow turn,
      before it cancels;
    - ``approval_prompt``: a prompt whose turn asks the host for a permission (a harness that
      claims ``permissions``); the kit runs it under the strict posture with a host that
      denies, and checks each request is asked, denied and recorded.
    """

    prompt: str = field(
        default="Reply with the single word: ok",
        validator=_bounds.bounded(1, _bounds.TEXT_MAX, multiline=True),
    )
    slow_prompt: str | None = field(
        default=None,
        validator=_bounds.optional_bounded(1, _bounds.TEXT_MAX, multiline=True),
    )
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    config: Mapping[str, Any] = field(converter=_mapping_copy, factory=dict)
    env: Mapping[str, str] = field(converter=_mapping_copy, factory=dict)
    target: str = field(default="local", validator=attrs.validators.in_(TARGETS))
    turn_timeout: float | None = None
    cancel_after: float = 0.2
    approval_prompt: str | None = field(
        default=None,
        validator=_bounds.optional_bounded(1, _bounds.TEXT_MAX, multiline=True),
    )
