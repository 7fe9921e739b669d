"""One turn through a freshly started ``opencode serve`` (the turn's process).

A session task (``context.start_soon``) drives the server: it waits for the announced URL,
subscribes to ``GET /event`` (the first event, ``server.connected``, says the subscription is
live), creates the OpenCode session on the first turn (its id is saved at once), posts the prompt
(``POST /session/{id}/message``, which returns when the prompt's loop is done) and, meanwhile,
answers each ``permission.asked`` through the runtime's approval seam. Payloads reach the turn
through a memory stream; the prompt's reply ends it. The runtime kills the server's process
group when the turn ends, however it ends.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from harness_cli_kit import NativeSession, safe_id
from harness_cli_kit.classify import auth_hint
from harness_hookspecs import HarnessError, Payload, ProcessHandle, SessionContext, TurnFailed

from .events import ServeEvents
from .server import ServeClient, ServeError, announced_url, load_http

#: Seconds the server may take to announce its URL, and the event stream to open.
START_TIMEOUT = 60.0
#: Seconds the event stream gets, after the prompt's reply, to report the session idle.
IDLE_GRACE = 3.0
TITLE = "harness_core session"
NO_EVENTS = "opencode serve's event stream did not open"
#: The provider whose key credentials-env passes to opencode without a grant (its vendor).
VENDOR, VENDOR_KEY = "openai", "OPENAI_API_KEY"
#: What the model is told when the host denies a call without a reason.
DENIED = "denied by the host"

Item = tuple[str, Any]


def start_task(
    context: SessionContext, function: Callable[[], Awaitable[None]]
) -> anyio.CancelScope:
    """Run ``function`` as a task of the session (cancelled with the returned scope)."""
    start_soon = getattr(context, "start_soon", None)
    if start_soon is None:
        raise HarnessError("provider-failed", "the runtime cannot run session tasks")
    scope = anyio.CancelScope()

    async def runner() -> None:
        with scope:
            await function()

    start_soon(runner)
    return scope


def _first(group: BaseExceptionGroup[Any]) -> Any:
    """The first leaf exception of a (nested) group."""
    error = group.exceptions[0]
    return _first(error) if isinstance(error, BaseExceptionGroup) else error


async def _user_count(client: ServeClient, native_id: str) -> int | None:
    """How many user messages the session holds; ``None`` when OpenCode cannot list them: it
    refuses (400) to list a session holding a structured-output message (it fails to read back
    the ``format`` it stored), so such a turn gets no fork mark and takes no steer."""
    try:
        return len(await client.user_messages(native_id))
    except ServeError as error:
        if error.status == 400:
            return None
        raise


def failed(error: ServeError) -> TurnFailed:
    if error.status == 404:
        return TurnFailed(reason="session-not-found", hint="opencode does not know the session")
    if error.status:
        return TurnFailed(reason="provider-failed", hint="opencode serve refused a request")
    return TurnFailed(reason="provider-failed", hint="opencode serve stopped answering")


def _put(send: MemoryObjectSendStream[Item], item: Item) -> None:
    try:
        send.send_nowait(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the turn is over


@dataclass
class ServeTurn:
    """The server, the session and the prompt of one turn."""

    context: SessionContext
    process: ProcessHandle
    password: str
    workspace: str
    session: NativeSession
    #: The ``POST /session/{id}/message`` body (parts, model, format).
    body: Mapping[str, Any]
    structured: bool = False
    #: Calls the host allowed: a later ask for the same call (OpenCode may ask per permission
    #: kind, e.g. ``external_directory`` then ``bash``) is allowed without asking again.
    allowed: set[str] = field(default_factory=set)
    #: A fork to make before the prompt: ``session`` (default: this one) forked before its
    #: user message number ``before`` (0-based; ``None``: all its messages); the turn then
    #: goes on in the new session (a fork's child, or a rewind)
    branch: Mapping[str, Any] | None = None
    #: the fork was made
    branched: bool = False
    #: the index of the turn's own user message in its session, once prompted
    user_index: int | None = None
    #: the server and the session, once the prompt is being answered (what a steer posts to)
    prompting: tuple[ServeClient, str, int] | None = None

    async def run(self) -> AsyncIterator[Payload]:
        send, receive = anyio.create_memory_object_stream[Item](math.inf)
        scope = start_task(self.context, lambda: self._pump(send))
        try:
            async with receive:
                async for kind, value in receive:
                    if kind == "payload":
                        yield value
                    elif kind == "reached":
                        value.set()  # every payload before it is yielded (and recorded)
                    elif kind == "raise":
                        raise value
                    else:
                        for payload in value:
                            yield payload
                        return
        finally:
            scope.cancel()

    async def _pump(self, send: MemoryObjectSendStream[Item]) -> None:
        """Drive the server; always ends with one ``end`` (or ``raise``) item."""
        ending: Item = ("end", [])
        try:
            ending = ("end", await self._serve(send))
        except* ServeError as group:
            ending = ("end", [failed(_first(group))])
        except* TimeoutError:
            ending = ("end", [TurnFailed(reason="provider-failed", hint=NO_EVENTS)])
        except* Exception as group:  # a bug: raised in the turn, not in the session's tasks
            ending = ("raise", group)
        _put(send, ending)

    async def _serve(self, send: MemoryObjectSendStream[Item]) -> list[Payload]:
        lines = self.process.lines()
        # While the server starts up (its stdout waits in the pipe), on a worker thread as the
        # ACP adapter imports its SDK: a host's other sessions keep their event loop meanwhile.
        await anyio.to_thread.run_sync(load_http)
        url = None
        with anyio.move_on_after(START_TIMEOUT):
            url = await announced_url(lines)
        if url is None:
            return [TurnFailed(reason="provider-failed", hint="opencode serve did not start")]
        client = ServeClient(url, self.password, self.workspace)
        async with client, anyio.create_task_group() as tasks:
            tasks.start_soon(_drain, lines)
            if self.branch is not None:
                native_id = await self._fork(client)
            else:
                native_id = self.session.native_id or await client.create_session(TITLE)
            self.session.remember(native_id)
            self.context.report_vendor_session_id(native_id)
            events = ServeEvents(native_id, structured=self.structured)
            subscribed, idle = anyio.Event(), anyio.Event()
            tasks.start_soon(self._relay, client, events, send, (subscribed, idle), tasks)
            with anyio.fail_after(START_TIMEOUT):
                await subscribed.wait()
            before = await _user_count(client, native_id)
            try:
                # (a steer needs the count: it goes in only after the turn's own message)
                self.prompting = (client, native_id, before) if before is not None else None
                reply = await client.prompt(native_id, self.body)
            except ServeError as error:
                missing = await self._without_credentials(client, error)
                if missing is None:
                    raise
                tasks.cancel_scope.cancel()
                return [missing]
            with anyio.move_on_after(IDLE_GRACE):
                await idle.wait()
            self.prompting = None
            after = await _user_count(client, native_id)
            if after is not None:
                self.user_index = after - 1
            elif before is not None:  # the turn's own message (no steer could go in)
                self.user_index = before
            tasks.cancel_scope.cancel()
        if events.idle:
            # The session is idle, its state saved: stop the server at once (SIGKILL, as the
            # stream CLIs are at their terminal line) rather than by SIGTERM and its shutdown.
            await self.process.terminate(0)
        return events.ending(reply)

    async def steer(self, text: str) -> bool:
        """Post ``text`` into the session while its prompt runs (OpenCode's loop reads it
        before its next model request); ``False`` when no prompt is running yet or any more."""
        prompting = self.prompting
        if prompting is None:
            return False
        client, native_id, before = prompting
        body = {key: value for key, value in self.body.items() if key != "format"}
        try:
            # only once the turn's own message is in: a steer must not come before its prompt
            if len(await client.user_messages(native_id)) <= before:
                return False
            await client.prompt_async(
                native_id, {**body, "parts": [{"type": "text", "text": text}]}
            )
        except ServeError:
            return False
        return True

    async def _fork(self, client: ServeClient) -> str:
        """Make :attr:`branch`'s fork; returns the new session's id (which replaces ours)."""
        assert self.branch is not None
        source = self.branch.get("session") or self.session.native_id
        if not isinstance(source, str):
            raise ServeError(0)
        before, message = self.branch.get("before"), None
        if isinstance(before, int):
            users = await client.user_messages(source)
            message = users[before] if before < len(users) else None
        native_id = await client.fork(source, message)
        self.session.replace = self.session.native_id is not None
        self.branched = True
        return native_id

    async def _without_credentials(
        self, client: ServeClient, error: ServeError
    ) -> TurnFailed | None:
        """``authentication-required`` when the prompt failed (OpenCode answers an opaque 500)
        because the model's provider has no credentials: OpenCode leaves a provider without a
        key out of its ``connected`` list, so the model is "not found". ``None`` otherwise."""
        model = self.body.get("model")
        provider = model.get("providerID") if isinstance(model, Mapping) else None
        if error.status < 500 or not isinstance(provider, str):
            return None
        try:
            connected, variables = await client.providers()
        except ServeError:
            return None
        if provider in connected:
            return None
        if provider == VENDOR:  # its key is the one credentials-env passes by default
            return TurnFailed(
                reason="authentication-required", hint=auth_hint("opencode", VENDOR_KEY)
            )
        variable = variables.get(provider) or "its key"
        return TurnFailed(
            reason="authentication-required",
            hint=f"opencode has no credentials for provider {safe_id(provider) or '?'}: grant "
            f"{variable} to opencode in grants.toml (by default only {VENDOR_KEY} is passed)",
        )

    async def _relay(
        self,
        client: ServeClient,
        events: ServeEvents,
        send: MemoryObjectSendStream[Item],
        signals: tuple[anyio.Event, anyio.Event],
        tasks: TaskGroup,
    ) -> None:
        """The event stream -> payloads; each permission ask answered in its own task."""
        subscribed, idle = signals
        try:
            async for data in client.events():
                subscribed.set()
                if not isinstance(data, Mapping):
                    continue
                for payload in events.event(data):
                    _put(send, ("payload", payload))
                for ask in events.take_asks():
                    reached = anyio.Event()
                    _put(send, ("reached", reached))
                    tasks.start_soon(self._answer, client, events, ask, reached)
                if events.idle:
                    idle.set()
        except ServeError:
            pass  # the server is gone: the prompt's request says so
        finally:
            subscribed.set()
            idle.set()

    async def _answer(
        self,
        client: ServeClient,
        events: ServeEvents,
        ask: Mapping[str, Any],
        reached: anyio.Event,
    ) -> None:
        """Ask the host once the turn has recorded what came before the ask (the call's
        ``tool.started``), then answer OpenCode."""
        ask_id = safe_id(ask.get("id"))
        if ask_id is None:
            return
        request, call_id = events.permission(ask)
        await reached.wait()
        if call_id is not None and call_id in self.allowed:
            allowed, reason = True, None
        else:
            decision = await self.context.request_permission(request)
            allowed, reason = decision.allowed, decision.reason
            if allowed and call_id is not None:
                self.allowed.add(call_id)
        try:
            # A reject with a message: the call fails with it and the turn goes on (without
            # one OpenCode stops the whole prompt).
            await client.answer(
                ask_id, "once" if allowed else "reject", None if allowed else reason or DENIED
            )
        except ServeError:
            pass  # the server is gone: the prompt's request says so


async def _drain(lines: AsyncIterator[bytes]) -> None:
    """Keep reading the server's stdout (a full pipe would block it)."""
    async for _ in lines:
        pass
