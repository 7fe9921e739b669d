"""The runtime's :class:`~harness_hookspecs.SessionContext`: spawning through the sandbox."""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs
from harness_hookspecs import (
    HarnessError,
    LedgerStore,
    McpBridge,
    Payload,
    PermissionDecision,
    PermissionRequest,
    SandboxHandle,
)

from . import proctree
from .approvals import Approvals, Recorder
from .digests import sha256_hex
from .redaction import Redactor
from .tool_hooks import AfterTool

if TYPE_CHECKING:
    from .host_tools import ToolBridge
    from .process import Process
    from .transcript import TranscriptTurn

_contexts = itertools.count(1)

ENV_STATE_DIR = "HARNESS_STATE_DIR"


def default_state_root() -> Path:
    configured = os.environ.get(ENV_STATE_DIR)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "harness-core"


def state_dir_for(root: Path, harness: str, session_id: str) -> Path:
    """Where an adapter's durable state for one session lives (stable across resume)."""
    return Path(state_path(root, harness, session_id))


def state_path(root: str | os.PathLike[str], harness: str, session_id: str) -> str:
    """:func:`state_dir_for` as a string (no pathlib objects on the session hot path)."""
    digest = sha256_hex(session_id.encode())[:32]
    return os.path.join(root, harness.replace(":", "_"), digest)


def make_state_dir(path: str | os.PathLike[str]) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        raise HarnessError("invalid-request", "the state directory is not writable") from None


class RuntimeSessionContext:
    """One per live session; owned by the controller."""

    def __init__(
        self,
        *,
        session_id: str,
        harness: str,
        target: str,
        workspace: str | None,
        model: str | None,
        posture: str,
        config: Mapping[str, object],
        credential_env: Mapping[str, str],
        sandbox: SandboxHandle,
        state_root: Path,
        redactor: Redactor,
        task_group: anyio.abc.TaskGroup | None,
        env_passthrough: Sequence[str] = (),
        approvals: Approvals | None = None,
        ledger: LedgerStore | None = None,
        instructions: str | None = None,
        after_tool: AfterTool | None = None,
    ) -> None:
        self.session_id = session_id
        self.harness = harness
        self.target = target
        self.workspace = sandbox.workspace or workspace
        self.model = model
        self.posture = posture
        self.config = config
        #: the host's instructions for the harness (``OpenSessionRequest.instructions``)
        self.instructions = instructions
        #: the CLI's own id of the session, once its adapter said it
        self.vendor_session_id: str | None = None
        #: called with a newly reported vendor id (set by the controller once the record exists)
        self.on_vendor_session_id: Callable[[str], None] | None = None
        self.sandbox = sandbox
        self.redactor = redactor
        self._credential_env = dict(credential_env)
        self._state_root = state_root
        self._task_group = task_group
        self._passthrough = tuple(env_passthrough)
        self.deadline: float | None = None
        self.approvals = approvals if approvals is not None else Approvals()
        self._after_tool = after_tool
        #: set by the controller while a turn runs: records a payload in that turn
        self.recorder: Recorder | None = None
        self.turn_id: str | None = None
        self.turn_processes: list[Process] = []
        self.session_processes: list[Process] = []
        self.background_scopes: list[anyio.CancelScope] = []
        self._background_tasks: set[int] = set()
        #: Every process this session spawns carries ``<owner>/<this>.<n>`` (see proctree).
        self.tag_prefix = f"s{next(_contexts)}."
        #: Whether a spawn with that tag ended without a Process to terminate (it failed or was
        #: cancelled mid-way, and may still have started a child): only then has the close
        #: anything to sweep - each terminated Process has swept its own tag.
        self._spawned = False
        self._ledger = ledger
        self.bridge: ToolBridge | None = None
        self._turn_env: dict[str, str] = {}
        #: set by the controller when the host allows delegation (:mod:`.delegation`)
        self.delegate: Callable[..., Awaitable[Any]] | None = None

    @property
    def has_processes(self) -> bool:
        """Whether ending a turn or the session has any process to stop (else no wait)."""
        return bool(self.turn_processes or self.session_processes)

    @property
    def closing_waits(self) -> bool:
        """Whether closing the session has anything to wait for: processes to stop (or to
        sweep: anything ever spawned), a bridge to close."""
        return bool(self.turn_processes or self.session_processes or self._spawned) or (
            self.bridge is not None
        )

    @property
    def env(self) -> Mapping[str, str]:
        return {**self.sandbox.env, **self._credential_env, **self._turn_env}

    # -- the loopback MCP bridge (harness_core.host_tools) -----------------------------------

    @property
    def mcp_bridge(self) -> McpBridge | None:
        """Where the session's host tools are served, or None (no tools selected)."""
        return self.bridge.endpoint if self.bridge is not None else None

    def mcp_session_token(self) -> str | None:
        """The token of an agent that lives for the whole session (ACP): honoured only while
        one of the session's turns runs. Per-turn CLIs find theirs in ``mcp_bridge.token_env``."""
        if self.bridge is None:
            return None
        token = self.bridge.session_token()
        self.add_secret(token)
        return token

    def begin_bridge_run(
        self, run_id: str, sink: Callable[[Payload], bool], deadline: float | None
    ) -> None:
        """Mint the run's token: redacted everywhere, in the environment of the turn's processes."""
        if self.bridge is None:
            return
        token = self.bridge.begin_run(run_id, sink, deadline=deadline)
        self.add_secret(token)
        self._turn_env = {self.bridge.endpoint.token_env: token}

    def serve_bridge_approvals(
        self, answer: Callable[[Mapping[str, Any]], Awaitable[str]]
    ) -> str | None:
        """Serve the running turn's permission prompts on the bridge: ``await answer(arguments)``
        gives the text the CLI expects (the adapter asks :meth:`request_permission` in it), and
        the turn's token gains the approval scope. The tool's name on the bridge, or None (no
        bridge, no turn running)."""
        if self.bridge is None or self.turn_id is None:
            return None
        return self.bridge.serve_approvals(self.turn_id, answer)

    def end_bridge_run(self, run_id: str) -> None:
        """Revoke the run's token (before the terminal event is recorded)."""
        self._turn_env = {}
        if self.bridge is not None:
            self.bridge.end_run(run_id)

    async def close_bridge(self) -> None:
        bridge, self.bridge = self.bridge, None
        self._turn_env = {}
        if bridge is not None:
            await bridge.close()

    @property
    def state_dir(self) -> str:
        """The session's own directory (created on first use; stable across resume)."""
        path = state_path(self._state_root, self.harness, self.session_id)
        make_state_dir(path)
        return path

    def transcript(self) -> tuple[TranscriptTurn, ...]:
        """The session's earlier turns from the ledger, for a harness that replays its context
        (no native resume) or rebuilds its memory after a resume in a new process."""
        if self._ledger is None:
            return ()
        from .transcript import transcript  # only a harness that replays its context asks

        return transcript(self._ledger, self.session_id)

    def add_secret(self, value: str) -> None:
        self.redactor.add(value)

    def report_vendor_session_id(self, value: str) -> None:
        """Keep the CLI's own id of the session (see the contract's ``SessionContext``); a new
        one is handed to :attr:`on_vendor_session_id` (the controller updates the record)."""
        if not isinstance(value, str) or not 0 < len(value) <= 256 or not value.isprintable():
            return
        if value == self.vendor_session_id:
            return
        self.vendor_session_id = value
        if self.on_vendor_session_id is not None:
            self.on_vendor_session_id(value)

    @property
    def wants_after_tool_context(self) -> bool:
        """Whether the host has ``after_tool`` hooks that add context for the model's next
        request (:mod:`.tool_hooks`): a harness that can take it then asks
        :meth:`after_tool_context` after each tool call."""
        return self._after_tool is not None and self._after_tool.adds_context

    async def after_tool_context(self, call_id: str) -> str | None:
        """The text the host's ``adds_context`` hooks answered for tool call ``call_id`` of the
        running turn, once its ``tool.completed`` is recorded (a bounded wait); the harness puts
        it before the model's next request. ``None``: nothing to add."""
        if self._after_tool is None:
            return None
        return await self._after_tool.context_for(self.session_id, call_id)

    async def run_agent(
        self,
        harness: str,
        prompt: str,
        *,
        output_schema: Mapping[str, Any] | None = None,
        posture: str | None = None,
        session: str | None = None,
    ) -> Any:
        """Run one turn of another harness as a child session of this one, from inside the
        running turn (:mod:`.delegation`); its :class:`~harness_core.delegation.ChildAnswer`.
        ``policy-refused`` when the host does not allow delegation."""
        if self.delegate is None:
            raise HarnessError("policy-refused", "the host does not allow delegation")
        return await self.delegate(
            harness, prompt, output_schema=output_schema, posture=posture, session=session
        )

    async def request_permission(self, request: PermissionRequest) -> PermissionDecision:
        """Ask the host (see :mod:`harness_core.approvals`); recorded in the running turn."""
        if not isinstance(request, PermissionRequest):
            raise HarnessError("invalid-request", "request_permission takes a PermissionRequest")
        request = attrs.evolve(request, session_id=self.session_id, turn_id=self.turn_id)
        return await self.approvals.resolve(request, self, self.recorder)

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        lifetime: str = "turn",
    ) -> Process:
        # Imported here: a session that spawns nothing (a function harness) does without it.
        from .process import base_environment, spawn

        if lifetime not in ("turn", "session"):
            raise HarnessError("invalid-request", "lifetime must be turn or session")
        argv = _argument_list(argv)
        full_env = {**base_environment(self._passthrough), **self.env, **_environment(env)}
        workdir = cwd or self.workspace
        if workdir is not None and not os.path.isdir(workdir):
            if cwd:
                raise HarnessError(
                    "invalid-request", f"the directory {cwd[-160:]!r} does not exist"
                )
            raise HarnessError("invalid-request", "the workspace directory does not exist")
        untracked, self._spawned = self._spawned, True  # a failed spawn may have started one
        process = await spawn(
            (*self.sandbox.command_prefix, *argv),
            env=full_env,
            cwd=workdir,
            stdin=stdin,
            tag_prefix=self.tag_prefix,
        )
        self._spawned = untracked
        (self.turn_processes if lifetime == "turn" else self.session_processes).append(process)
        return process

    def start_soon(self, function: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run a background task for this session's lifetime (cancelled on close/detach)."""
        if self._task_group is None:
            raise HarnessError("invalid-request", "the controller is not running (use async with)")
        scope = anyio.CancelScope()
        self.background_scopes.append(scope)

        async def runner() -> None:
            self._background_tasks.add(anyio.get_current_task().id)
            with scope:
                await function(*args)

        self._task_group.start_soon(runner)

    async def kill_processes(self, which: str, grace: float, *, stopped: bool = False) -> None:
        """Kill the turn's (or the session's) processes and everything they started.

        At the end of a turn that did not complete (``stopped``: cancelled, timed out, failed),
        a session-lifetime process whose output the turn itself was reading goes too: it may
        ignore the cancel and still be busy, and its stream is at an unknown position, so it
        could not serve the next turn. It gets ``grace`` to exit on its own, then SIGTERM, then
        SIGKILL; the adapter starts a fresh one. (A process read by a background task of the
        session - an RPC connection with its own cancel protocol - is left alone.)
        """
        processes = self.turn_processes if which == "turn" else self.session_processes
        while processes:
            await processes.pop().terminate(grace)
        if which == "turn":
            for process in list(self.session_processes):
                read_by_turn = process.reader is not None and (
                    process.reader not in self._background_tasks
                )
                if process.interrupted or (stopped and read_by_turn):
                    self.session_processes.remove(process)
                    await process.terminate(grace, linger=grace)
                elif read_by_turn:
                    process.reader = None
        elif self._spawned:
            # Anything of this session still tagged (its spawns are all gone by now). A session
            # whose spawns all returned a Process (each swept its own tag when terminated) has
            # nothing left to find: no /proc scan, no thread hop.
            await anyio.to_thread.run_sync(
                lambda: proctree.kill_all((), f"{proctree.owner()}/{self.tag_prefix}", prefix=True)
            )


def _argument_list(argv: Sequence[str]) -> list[str]:
    """``spawn``'s argv as the list of texts ``exec`` takes: a single string (a shell line) or
    a NUL would otherwise be split into characters or raise deep in ``subprocess``."""
    if isinstance(argv, (str, bytes)):
        raise HarnessError(
            "invalid-request", 'spawn takes a list of arguments (["pytest", "-q"]), not a string'
        )
    arguments = list(argv)
    if not all(isinstance(a, str) and "\x00" not in a for a in arguments):
        raise HarnessError("invalid-request", "every spawn argument must be text without NUL")
    return arguments


def _environment(env: Mapping[str, str] | None) -> Mapping[str, str]:
    """``spawn``'s extra variables, checked as ``exec`` needs them (names without ``=``)."""
    if not env:
        return {}
    for name, value in env.items():
        if not (isinstance(name, str) and isinstance(value, str)) or (
            not name or "=" in name or "\x00" in name or "\x00" in value
        ):
            raise HarnessError(
                "invalid-request", "spawn's env must map names (no '=' or NUL) to text without NUL"
            )
    return env
