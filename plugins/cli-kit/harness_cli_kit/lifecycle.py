"""The session lifecycle of a CLI that runs one process per turn and names its sessions itself.

Open saves an empty :class:`~harness_cli_kit.state.NativeSession`; the first turn's stream fills
in the native id; resume (in any process) reads it back. There is no in-band cancel: the runtime
kills the turn's process group. A subclass supplies ``check`` (the config, at open and
resume), ``launch`` (argv, environment and stream parser of one turn: what is its CLI's own) and
the descriptor's facts as class attributes; :meth:`PerTurnCliAdapter.run_turn` does the rest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness_hookspecs import (
    TERMINAL_TYPES,
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    OpenSessionRequest,
    Payload,
    ProcessHandle,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    Status,
    assert_supported,
)

from .describe import CLI_CONFIG_PROPERTIES, cli_descriptor
from .endpoint import preflight
from .locate import find_cli
from .settings import require_workspace
from .state import DEFAULT_KEY, NativeSession, Sessions
from .stream import JsonLinesStream


@dataclass
class CliTurn:
    """One turn's process: what to run, with which environment, parsed by which stream."""

    argv: list[str]
    env: dict[str, str]
    stream: JsonLinesStream
    #: The model endpoint to probe before spawning (CLIs slow to give up on one).
    probe: str | None = None
    #: A status message once the process runs.
    started: str | None = None
    #: Written to the process's stdin, which then stays open (a CLI that reads its prompt and
    #: its permission answers there); ``None``: stdin is closed.
    stdin: bytes | None = None

    def add_options(self, *options: str) -> None:
        """Put CLI options before the ``--`` that ends them (ahead of the prompt)."""
        at = self.argv.index("--") if "--" in self.argv else len(self.argv)
        self.argv[at:at] = options


class PerTurnCliAdapter:
    name: str
    #: The state file under ``state_dir`` and the key of the native id in it.
    state_file: str
    state_key: str = DEFAULT_KEY
    display_name: str
    #: The package and release the adapter was verified against ("opencode-ai 1.18.33").
    tested_cli: str
    features: tuple[str, ...] = ("resume", "cancel", "usage")
    details: dict[str, str] = {}
    #: Set to report the installed CLI's version and path in the descriptor.
    binary: str | None = None
    #: Set instead of ``binary`` for a CLI whose ``--version`` is slow (10 s): the descriptor
    #: reports where it is (or that it is not found), not its version.
    command_name: str | None = None
    vendor: str | None = None
    #: The config keys the adapter reads besides :data:`CLI_CONFIG_PROPERTIES` (JSON Schema
    #: ``properties``); a session config with any other key is ``invalid-request``.
    config_properties: Mapping[str, Any] = {}

    def __init__(self) -> None:
        self._sessions: Sessions[NativeSession] = Sessions()
        self._descriptor: HarnessDescriptor | None = None
        #: each session's running turn process, while it runs (what a steer writes to)
        self.running: dict[str, ProcessHandle] = {}

    def describe(self) -> HarnessDescriptor:
        if self._descriptor is None:
            details = dict(self.details)
            if self.binary is None and self.command_name is not None:
                path = find_cli({}, self.command_name)
                details.update({"cli_path": path[-128:]} if path else {"cli_version": "not found"})
            self._descriptor = cli_descriptor(
                self.name,
                self.display_name,
                tested_cli=self.tested_cli,
                features=self.features,
                details=details,
                binary=self.binary,
                vendor=self.vendor,
                config={**CLI_CONFIG_PROPERTIES, **self.config_properties},
            )
        return self._descriptor

    async def check(self, context: SessionContext) -> str:
        """Validate the session config at open and resume; returns the CLI to run (or "")."""
        raise NotImplementedError

    async def open_session(
        self, request: OpenSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.target)
        cli = await self.check(context)
        self._sessions[context.session_id] = NativeSession.create(
            context.state_dir, self.state_file, key=self.state_key, cli=cli
        )
        return SessionRef(provider=self.name, target=request.target, session_id=context.session_id)

    async def resume_session(
        self, request: ResumeSessionRequest, context: SessionContext
    ) -> SessionRef:
        assert_supported(self.describe(), request.session.target, "resume")
        session = self.saved(request, context)
        session.cli = await self.check(context)
        self._sessions[request.session.session_id] = session
        if session.native_id:
            context.report_vendor_session_id(session.native_id)
        return request.session

    def saved(self, request: ResumeSessionRequest, context: SessionContext) -> NativeSession:
        """The session to resume (``session-not-found`` when there is none)."""
        return NativeSession.load(
            context.state_dir, self.state_file, key=self.state_key, what=f"no {self.name} state"
        )

    def launch(
        self, prompt: str, context: SessionContext, session: NativeSession, workspace: str
    ) -> CliTurn:
        """Write the turn's config files; return its argv, environment and stream."""
        raise NotImplementedError

    def launch_turn(
        self,
        request: RunTurnRequest,
        context: SessionContext,
        session: NativeSession,
        workspace: str,
    ) -> CliTurn:
        """The turn for ``request``: :meth:`launch` of its prompt, then :meth:`structured`
        when the request carries an output schema."""
        turn = self.launch(request.prompt, context, session, workspace)
        if request.output_schema is not None:
            self.structured(turn, dict(request.output_schema), context)
        return turn

    def structured(self, turn: CliTurn, schema: dict[str, Any], context: SessionContext) -> None:
        """Hand ``schema`` to the CLI (an adapter with native structured output overrides this
        and claims the ``structured-output`` feature). By default nothing: the runtime has put
        the schema in the prompt and validates the answer text."""

    async def run_turn(
        self, request: RunTurnRequest, context: SessionContext
    ) -> AsyncIterator[Payload]:
        session = self._sessions.of(request.session)
        workspace = require_workspace(context, self.name)
        turn = self.launch_turn(request, context, session, workspace)
        unreachable = await preflight(context, turn.probe)
        if unreachable is not None:
            yield unreachable
            return
        # stdin stays closed (/dev/null) unless the CLI reads it: some CLIs wait for input
        # forever on an open pipe.
        process = await context.spawn(
            turn.argv, env=turn.env, cwd=workspace, stdin=turn.stdin is not None
        )
        self.running[request.session.session_id] = process
        try:
            if turn.stdin is not None:
                await process.send(turn.stdin)
            if turn.started:
                yield Status(message=turn.started)

            def remember(native_id: str | None) -> None:
                session.remember(native_id)
                if session.native_id:  # the CLI's own id: the session record keeps it
                    context.report_vendor_session_id(session.native_id)

            async for payload in turn.stream.drive(process, remember):
                if payload.TYPE in TERMINAL_TYPES:  # before it: nothing runs after a terminal
                    self.turn_ended(request, context, turn.stream)
                yield payload
        finally:
            if self.running.get(request.session.session_id) is process:
                del self.running[request.session.session_id]

    def turn_ended(
        self, request: RunTurnRequest, context: SessionContext, stream: JsonLinesStream
    ) -> None:
        """Called once per turn whose process ran, when its outcome is known, before its
        terminal payload is yielded: keep what a later fork or rewind needs (where the turn
        ended in the CLI's conversation, see :mod:`.branches`). By default nothing."""

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # No in-band cancel: the runtime kills the turn's process group.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)
