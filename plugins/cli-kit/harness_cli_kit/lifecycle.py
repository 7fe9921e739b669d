"""The session lifecycle of a CLI that runs one process per turn and names its sessions itself.

Open saves an empty :class:`~harness_cli_kit.state.NativeSession`; the first turn's stream fills
in the native id; resume (in any process) reads it back. There is no in-band cancel: the runtime
kills the turn's process group. A subclass supplies ``check`` and ``run_turn`` and the
descriptor's facts as class attributes.
"""

from __future__ import annotations

from harness_hookspecs import (
    CancelTurnRequest,
    CloseSessionRequest,
    HarnessDescriptor,
    HarnessError,
    OpenSessionRequest,
    ResumeSessionRequest,
    RunTurnRequest,
    SessionContext,
    SessionRef,
    assert_supported,
)

from .describe import cli_descriptor
from .state import DEFAULT_KEY, NativeSession


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
    vendor: str | None = None

    def __init__(self) -> None:
        self._sessions: dict[str, NativeSession] = {}
        self._descriptor: HarnessDescriptor | None = None

    def describe(self) -> HarnessDescriptor:
        if self._descriptor is None:
            self._descriptor = cli_descriptor(
                self.name,
                self.display_name,
                tested_cli=self.tested_cli,
                features=self.features,
                details=self.details,
                binary=self.binary,
                vendor=self.vendor,
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
        session = NativeSession.load(
            context.state_dir, self.state_file, key=self.state_key, what=f"no {self.name} state"
        )
        session.cli = await self.check(context)
        self._sessions[request.session.session_id] = session
        return request.session

    def session(self, request: RunTurnRequest) -> NativeSession:
        session = self._sessions.get(request.session.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        return session

    async def cancel_turn(self, request: CancelTurnRequest, context: SessionContext) -> None:
        # No in-band cancel: the runtime kills the turn's process group.
        return None

    async def close_session(self, request: CloseSessionRequest, context: SessionContext) -> None:
        self._sessions.pop(request.session.session_id, None)
