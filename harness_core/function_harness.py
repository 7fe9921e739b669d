"""``@harness("name")``: turn one async function into a harness plugin.

The function is called once per turn as ``run(message, session)`` and may return a ``str``, a
:class:`Result`, an awaitable of either, or an (async) iterator of ``str`` chunks, ``Result`` and
event payloads. The runtime turns whatever it gets into the contract's events.
"""

from __future__ import annotations

import inspect
import logging
import math
import types
import uuid
from collections import deque
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from types import CoroutineType
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
from attrs import define, field, frozen
from harness_hookspecs import (
    ADAPTER_TYPES,
    TERMINAL_TYPES,
    CancelTurnRequest,
    CloseSessionRequest,
    ConversationTurn,
    ForkSessionRequest,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    OpenSessionRequest,
    Payload,
    PermissionDecision,
    PermissionRequest,
    ProcessHandle,
    ResumeSessionRequest,
    RewindSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    SteerTurnRequest,
    TurnCompleted,
    Usage,
    UsageReported,
    assert_supported,
)
from harness_hookspecs._bounds import TEXT_MAX
from harness_hookspecs.events import PAYLOAD_TYPES
from harness_hookspecs.values import Value

from .budgets import add_usage

F = TypeVar("F", bound=Callable[..., Any])

_PAYLOAD_CLASSES = frozenset(PAYLOAD_TYPES.values())

ADAPTER_ATTRIBUTE = "__harness_adapter__"

#: Seconds a function may go on after its turn is cancelled (a cancel, the deadline) while
#: catching the cancellation and awaiting again; past them it is closed and left, and the
#: turn ends as the cancellation says (:func:`_bounded`).
CANCEL_GRACE = 2.0

_log = logging.getLogger("harness_core")


@frozen(repr=False, eq=False)
class Result(Value):
    """What a one-function harness may return instead of a plain string: the answer and
    the turn's usage (recorded as a ``usage`` event before the terminal)."""

    #: the final answer
    text: str = ""
    #: what the turn used (``None``: unknown)
    usage: Usage | None = None


@frozen(repr=False, eq=False)
class Message(Value):
    """The user's message for this turn."""

    #: the prompt, as the host sent it (with the output schema appended when the turn has
    #: one)
    content: str
    #: the turn's id (``turn.started.turn_id``)
    turn_id: str
    role: str = "user"


@define
class FunctionSession:
    """What the function sees of its session; ``state`` is free for the function to use.

    ``env`` holds only what the session was granted (credentials, sandbox variables), not the
    host's environment. The function itself runs in the host process with the host's privileges
    and ``os.environ``; to run untrusted code, start it with :meth:`spawn` (sandboxed) or use a
    stdio-jsonl program under a sandbox instead.
    """

    #: the session's id (``SessionRef.session_id``)
    session_id: str
    #: the name the harness is registered under (the ``@harness`` name)
    harness_id: str
    #: the session's workspace directory (``open_session(workspace=...)``), or ``None``
    workspace: str | None
    #: the model the host asked for (``open_session(model=...)``), or ``None``
    model: str | None
    #: the session's configuration (``open_session(config={...})``, ``--config KEY=VALUE``)
    config: Any
    #: the environment granted to the session (credentials, sandbox variables), a mapping;
    #: not the host's ``os.environ``
    env: Any
    #: the conversation so far as ``(role, text)`` pairs, ``("user", prompt)`` and
    #: ``("assistant", answer)``; during a turn it already ends with the current prompt.
    #: Rebuilt from the ledger when the session is resumed (in a new process too).
    history: list[tuple[str, str]] = field(factory=list)
    #: free for the function: kept between the turns of the session in this process (not
    #: persisted: a resume starts empty)
    state: dict[str, Any] = field(factory=dict)
    _context: SessionContext | None = field(default=None, repr=False, alias="context")
    #: what the host steered into the running turn and the function has not taken yet
    _steering: list[str] = field(factory=list, repr=False, alias="steering")
    _steered: anyio.Event | None = field(default=None, repr=False, alias="steered")

    def take_steering(self) -> list[str]:
        """The texts the host steered into the running turn since the last call (each is in
        :attr:`history` too, as a ``user`` entry, once steered); empty when there are none."""
        taken, self._steering = self._steering, []
        return taken

    async def wait_steering(self) -> list[str]:
        """Wait until the host steers the running turn, then :meth:`take_steering`."""
        while not self._steering:
            self._steered = anyio.Event()
            await self._steered.wait()
        return self.take_steering()

    def steer(self, text: str) -> None:
        """The runtime's side of ``Controller.steer`` (the harness claims ``steer``)."""
        self._steering.append(text)
        self.history.append(("user", text))
        if self._steered is not None:
            self._steered.set()
            self._steered = None

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        lifetime: str = "turn",
    ) -> ProcessHandle:
        """Start a process the runtime controls, exactly as an adapter's ``context.spawn``.

        It runs inside the session's sandbox with a minimal environment plus :attr:`env` and
        ``env``, in its own process group; with ``lifetime="turn"`` (the default) it and
        everything it starts are killed when the turn ends, is cancelled or times out,
        ``"session"`` keeps it until the session closes.
        """
        if self._context is None:
            raise HarnessError("invalid-request", "the session has no runtime context")
        return await self._context.spawn(argv, env=env, cwd=cwd, stdin=stdin, lifetime=lifetime)

    @property
    def context(self) -> SessionContext | None:
        """The runtime's context for this session (what an adapter gets)."""
        return self._context

    async def run_agent(
        self,
        harness: str,
        prompt: str,
        *,
        output_schema: Mapping[str, Any] | None = None,
        posture: str | None = None,
        session: str | None = None,
    ) -> Any:
        """Ask another harness: ``answer = await session.run_agent("codex", "review x.py")``
        runs one turn of ``harness`` as a child session of this one and returns its
        :class:`~harness_core.delegation.ChildAnswer` (``.text``, ``.output`` matching
        ``output_schema``, ``.status``, ``.session_id`` to pass as ``session`` to continue
        that child). The host must allow it (``Controller(delegation=...)``); the child's
        posture is this session's or narrower, its cost counts against this session's budget.
        A refusal raises ``HarnessError`` (``policy-refused``, ``limit-exceeded``...)."""
        run_agent = getattr(self._context, "run_agent", None)
        if run_agent is None:
            raise HarnessError("policy-refused", "the host does not allow delegation")
        return await run_agent(
            harness, prompt, output_schema=output_schema, posture=posture, session=session
        )

    async def request_permission(
        self, request: PermissionRequest | None = None, /, **tool: Any
    ) -> PermissionDecision:
        """Ask the host before a tool call: ``await session.request_permission(tool="Bash",
        kind="shell", command="make test")`` (or a :class:`PermissionRequest`).

        The keywords are :meth:`PermissionRequest.for_tool`'s: ``tool``, ``kind`` (``shell``,
        ``write``, ``read``, ``fetch``, ``mcp``, ``other``), ``command``, ``path``, ``input``,
        ``can_edit``. Returns the :class:`PermissionDecision` (``.allowed``, ``.behavior``,
        ``.source``, ``.reason``, ``.updated_input``), recorded as ``permission.requested`` /
        ``permission.resolved``. The harness must declare the ``permissions`` feature
        (``@harness(name, features=(..., "permissions"))``) for the ``strict`` posture."""
        if self._context is None:
            raise HarnessError("invalid-request", "the session has no runtime context")
        if request is None:
            try:
                request = PermissionRequest.for_tool(**tool)
            except (TypeError, ValueError):
                raise HarnessError("invalid-request", "bad permission request fields") from None
        return await self._context.request_permission(request)

    async def after_tool_context(self, call_id: str) -> str | None:
        """After yielding a tool call's ``ToolCompleted``: the context the host's
        ``adds_context`` after_tool hooks answered for it (:mod:`harness_core.tool_hooks`), to
        put before the model's next request; ``None`` when there is nothing to add (or no host
        hook adds context). Waits for the hooks, at most ``tool_hooks.CONTEXT_WAIT`` seconds."""
        ask = getattr(self._context, "after_tool_context", None)
        return await ask(call_id) if ask is not None else None


class FunctionHarness:
    """A full adapter around one async function (what ``@harness`` builds)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The runtime's dispatch calls close_at_once instead of close_session: a subclass's own
        # close_session (without its own close_at_once) must not be bypassed.
        if "close_session" in cls.__dict__ and "close_at_once" not in cls.__dict__:
            cls.close_at_once = None  # type: ignore[assignment,method-assign]

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        *,
        features: Iterable[str] = ("resume", "cancel"),
        targets: Iterable[str] = ("local",),
        version: str | None = None,
        vendor: str | None = None,
        display_name: str | None = None,
        config_schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.function = function
        self._descriptor = HarnessDescriptor(
            provider=name,
            targets=frozenset(targets),
            features=frozenset(features),
            version=version,
            vendor=vendor,
            display_name=display_name,
            details={"kind": "function"},
            config_schema=config_schema,
        )
        self._sessions: dict[str, FunctionSession] = {}

    def __repr__(self) -> str:
        return f"<FunctionHarness {self.name}>"

    def describe(self) -> HarnessDescriptor:
        return self._descriptor

    def _session(
        self, ref: SessionRef, context: SessionContext, *, resumed: bool = False
    ) -> FunctionSession:
        session = self._sessions.get(ref.session_id)
        if session is None:
            session = FunctionSession(
                session_id=ref.session_id,
                harness_id=self.name,
                workspace=context.workspace,
                model=context.model,
                config=context.config,
                env=context.env,
                context=context,
            )
            if resumed:
                # A resume in a new process: the memory is gone, the ledger has the turns.
                transcript = getattr(context, "transcript", None)
                if callable(transcript):
                    from .transcript import history_pairs  # (loaded only to replay a resume)

                    session.history = history_pairs(transcript())
            self._sessions[ref.session_id] = session
        # The runtime may hand a resumed or re-attached session a new context; the env is
        # read again at each turn (the turn's MCP bridge token, HARNESS_MCP_TOKEN, is in it).
        session._context = context
        session.env = context.env
        return session

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self._descriptor, request.target)
        ref = SessionRef(provider=self.name, target=request.target, session_id=context.session_id)
        self._session(ref, context)
        return ref

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self._descriptor, request.session.target, "resume")
        self._session(request.session, context, resumed=True)
        return request.session

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # Cancelling the turn's scope stops the function; nothing provider-side to do.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self.close_at_once(request)

    def close_at_once(self, request: CloseSessionRequest) -> None:
        """The close itself, which waits for nothing: the runtime's dispatch calls this
        (no coroutine, so the controller needs no deadline scope around it)."""
        self._sessions.pop(request.session.session_id, None)

    def run_turn(self, request: RunTurnRequest, context: SessionContext) -> AsyncIterator[Payload]:
        return _FunctionTurn(self, request, context)

    # The runtime performs steer, fork and rewind for the function (claimed as features):

    async def steer_turn(self, request: SteerTurnRequest, context: SessionContext) -> None:
        self._session(request.session, context).steer(request.text)

    async def fork_session(
        self, request: ForkSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self._descriptor, request.open.target, "fork")
        ref = SessionRef(
            provider=self.name, target=request.open.target, session_id=context.session_id
        )
        self._session(ref, context).history = _pairs(request.turns)
        return ref

    async def rewind_session(self, request: RewindSessionRequest, context: SessionContext) -> None:
        self._session(request.session, context).history = _pairs(request.turns)


class _FunctionTurn:
    """One call of the function as the turn's event stream (the function runs on the first
    ``__anext__``). A plain async iterator rather than a generator: a reply computed in one
    piece leaves nothing to close when the turn ends (``ag_frame`` is ``None``, as for a
    generator that ran to its end), so the turn needs no bounded ``aclose``."""

    def __init__(
        self, harness: FunctionHarness, request: RunTurnRequest, context: SessionContext
    ) -> None:
        self._harness = harness
        self._request = request
        self._context = context
        self._ready: deque[Payload] | None = None  # the reply's events, once called
        self._stream: AsyncIterator[Payload] | None = None  # a streamed reply's generator

    def __aiter__(self) -> _FunctionTurn:
        return self

    async def __anext__(self) -> Payload:
        if self._stream is not None:
            return await self._stream.__anext__()
        if self._ready is None:
            self._ready = deque()
            await self._call()
            if self._stream is not None:
                return await self._stream.__anext__()
        if self._ready:
            return self._ready.popleft()
        raise StopAsyncIteration

    @property
    def ag_frame(self) -> Any:
        """What there is to close: the streamed reply's generator frame, else ``None``."""
        return getattr(self._stream, "ag_frame", None)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()  # type: ignore[attr-defined]

    async def _call(self) -> None:
        request = self._request
        session = self._harness._session(request.session, self._context)
        message = Message(content=request.prompt, turn_id=request.turn_id)
        session.history.append(("user", request.prompt))
        result = self._harness.function(message, session)
        # An async def's coroutine first (inspect.isawaitable asks the Awaitable ABC last).
        if type(result) is CoroutineType or (
            not isinstance(result, str) and inspect.isawaitable(result)
        ):
            inner: Any = result.__await__() if hasattr(result, "__await__") else result
            try:
                step = inner.send(None)
            except StopIteration as stop:
                result = stop.value
            else:
                result = await _bounded(inner, step, session)
        if isinstance(result, str):
            self._ready.extend(_reply_end(session, [_fits(result)], None))  # type: ignore[union-attr]
        elif isinstance(result, Result):
            self._ready.extend(  # type: ignore[union-attr]
                _reply_end(session, [_fits(result.text)], result.usage)
            )
        elif result is None:
            self._ready.extend(_reply_end(session, [], None))  # type: ignore[union-attr]
        elif hasattr(result, "__aiter__") or isinstance(result, Iterable):
            self._stream = _streamed(session, result)
            # From here the turn's ``iterator.__anext__()`` is the generator's own: no second
            # coroutine per streamed event (``async for`` still goes through the method).
            self.__anext__ = self._stream.__anext__  # type: ignore[method-assign,assignment]
        else:
            raise HarnessError("provider-failed", "the function returned an unsupported value")


async def _streamed(session: FunctionSession, result: Any) -> AsyncIterator[Payload]:
    """The events of a reply the function streams (an (async) iterator of chunks/payloads)."""
    # An async iterable's iterator is iterated directly (no wrapper generator per item).
    items = result.__aiter__() if hasattr(result, "__aiter__") else _aiter(result)
    text_parts: list[str] = []
    usage: Usage | None = None
    append = text_parts.append
    following = items.__anext__
    while True:
        inner = following().__await__()
        try:  # the function's next item, bounded after a cancel (see _bounded)
            step = inner.send(None)
        except StopIteration as stop:
            item = stop.value
        except StopAsyncIteration:
            break
        else:
            try:
                item = await _bounded(inner, step, session)
            except StopAsyncIteration:
                break
        if isinstance(item, str):
            if item:
                append(item)
                yield MessageDelta(text=item if len(item) <= TEXT_MAX else _fits(item))
        elif isinstance(item, Result):
            if item.text:
                append(item.text)
                yield MessageDelta(text=_fits(item.text))
            usage = add_usage(usage, item.usage)
        elif type(item) in _PAYLOAD_CLASSES and item.TYPE in ADAPTER_TYPES:
            yield item
            if item.TYPE in TERMINAL_TYPES:
                session.history.append(("assistant", "".join(text_parts)))
                return
        else:
            raise HarnessError("provider-failed", "the function yielded a non-event value")
    for payload in _reply_end(session, text_parts, usage):
        yield payload


@types.coroutine
def _bounded(inner: Any, step: Any, session: FunctionSession) -> Generator[Any, Any, Any]:
    """The rest of an ``await`` of a step of the function whose iterator ``inner`` yielded
    ``step`` (it waits: the step that does not wait is taken by the caller, without this
    generator), as ``await`` does it, except that once the turn is cancelled the function has
    :data:`CANCEL_GRACE` seconds to stop. One that catches the cancellation and awaits again
    past them (a swallowing loop: the cancel scope delivers the cancellation again at each of
    its awaits) is closed and left, with a warning on the ``harness_core`` logger, and the
    cancellation goes on: the turn still ends, as cancelled or timed out, with one terminal
    event. Whether the turn is cancelled is asked of anyio (a wait in a cancelled scope that
    no scope of its own shields) when the function waits again after a wait that ended in an
    exception (asyncio throws the cancellation in) or in an outcome (trio sends it in as the
    awaited outcome, which cannot be told from the others here): not after an asyncio wait
    that ended as usual, ~1.4 us each of a streaming turn's waits.
    A function that also swallows the close (``GeneratorExit``) while inside a cancel scope of
    its own leaves that scope open in the turn's task: the turn then ends ``provider-failed``
    (asyncio), or trio's run fails on its corrupted cancel scope stack."""
    since: float | None = None  # when the function first waited in the cancelled turn
    ask = False  # whether to ask anyio if the turn is cancelled before this wait (the first:
    # a cancellation comes in at it, then we ask)
    while True:
        if ask and anyio.current_effective_deadline() == -math.inf:  # cancelled, unshielded
            now = anyio.current_time()
            if since is None:
                since = now
            elif now - since >= CANCEL_GRACE:
                _abandon(inner, session, now - since)
                yield from _cancellation()
        try:
            sent = yield step
        except BaseException as error:
            ask = True
            try:
                step = inner.throw(error)
            except StopIteration as stop:
                return stop.value
            continue
        ask = sent is not None  # asyncio sends None; trio an outcome, maybe the cancellation
        try:
            step = inner.send(sent)
        except StopIteration as stop:
            return stop.value


def _cancellation() -> Generator[Any, Any, None]:
    """Raise the cancellation of the cancelled scope we are in (a checkpoint does)."""
    yield from anyio.lowlevel.checkpoint().__await__()
    raise HarnessError("provider-failed", "the function went on after its turn was cancelled")


def _abandon(inner: Any, session: FunctionSession, seconds: float) -> None:
    """Leave a function that ignores its turn's cancellation: close it (``GeneratorExit``
    where it waits: its ``finally`` blocks run; one that catches that too and waits again is
    never resumed)."""
    _log.warning(
        "harness %s went on %.1f s after its turn was cancelled in session %s: abandoned",
        session.harness_id,
        seconds,
        session.session_id,
        extra={"session_id": session.session_id},
    )
    try:  # throw, not close(): an async generator's step (asend) closes without its frame
        inner.throw(GeneratorExit)
    except BaseException:  # GeneratorExit, StopIteration...: it is closed
        pass
    # else it caught GeneratorExit too and waits again: nothing drives it any more


def _reply_end(
    session: FunctionSession, text_parts: list[str], usage: Usage | None
) -> list[Payload]:
    """The events that end a reply: the whole message (when one event holds it), the usage,
    the terminal; the reply joins the session's history."""
    text = "".join(text_parts)
    session.history.append(("assistant", text))
    whole = len(text) <= TEXT_MAX  # streamed past one event's size: the deltas hold it
    end: list[Payload] = [MessageCompleted(text=text)] if whole else []
    if usage is not None:
        end.append(UsageReported(usage=usage))
    end.append(TurnCompleted(text=text if whole else None))
    return end


def _pairs(turns: Iterable[ConversationTurn]) -> list[tuple[str, str]]:
    """A conversation's turns as :attr:`FunctionSession.history` pairs."""
    pairs: list[tuple[str, str]] = []
    for turn in turns:
        pairs.append(("user", turn.prompt))
        if turn.answer is not None:
            pairs.append(("assistant", turn.answer))
    return pairs


def _fits(text: str) -> str:
    """``text`` if one event can hold it; more is a limit, not a bad request."""
    if len(text) > TEXT_MAX:
        raise HarnessError("limit-exceeded", "the harness returned more text than an event holds")
    return text


async def _aiter(items: Any) -> AsyncIterator[Any]:
    if hasattr(items, "__aiter__"):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


def harness(
    name: str,
    *,
    features: Iterable[str] = ("resume", "cancel"),
    targets: Iterable[str] = ("local",),
    version: str | None = None,
    vendor: str | None = None,
    display_name: str | None = None,
    config_schema: Mapping[str, Any] | None = None,
) -> Callable[[F], F]:
    """Decorate ``async def run(message, session)`` to make it a harness named ``name``.

    The function itself is returned (still callable); an entry point in the ``harness_core`` group
    may point straight at it.

    :param name: the harness name (``harness run NAME``, ``open_session(harness=NAME)``).
    :param features: what the harness declares in its descriptor (``harness describe NAME``),
        from the contract's ``FEATURES``. The default, ``("resume", "cancel")``, does not
        include ``permissions``: a function that calls :meth:`FunctionSession.request_permission`
        should declare it, or the ``strict`` posture is refused with ``unsupported-feature``.
        ``usage`` says it reports usage (a :class:`Result` with ``usage``).
    :param targets: where it runs (default ``("local",)``).
    :param version: the harness's version, shown by ``describe``.
    :param vendor: the model company behind it, if any.
    :param display_name: a human name for listings.
    :param config_schema: the keys ``session.config`` may hold, as a JSON Schema object
        (``{"properties": {"depth": {"type": "integer"}}}``); a config with another key or a
        wrong type is ``invalid-request`` at open. ``None`` (the default) declares nothing and
        leaves the function's keys unchecked (see :mod:`harness_core.config_check`).
    """

    def decorate(function: F) -> F:
        adapter = FunctionHarness(
            name,
            function,
            features=features,
            targets=targets,
            version=version,
            vendor=vendor,
            display_name=display_name,
            config_schema=config_schema,
        )
        setattr(function, ADAPTER_ATTRIBUTE, adapter)
        return function

    return decorate


def new_session_id() -> str:
    return f"hs_{uuid.uuid4().hex}"
