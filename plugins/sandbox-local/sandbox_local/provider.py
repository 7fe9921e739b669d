"""The ``local`` sandbox provider: a workspace directory per scope under one root.

Layout under the root (``HARNESS_WORKSPACES``, else ``$XDG_DATA_HOME/harness-core/workspaces``,
else ``~/.local/share/harness-core/workspaces``; a session may name another with config ``root``)::

    run/<session>-<random>/        scope ``run``: fresh per provision, removed on finalize
    agent/<agent>/                 scope ``agent``: durable, shared by every user of the agent
    agent-user/<agent>/<user>/     scope ``agent-user``: durable, one per (agent, user)
    fork/<session>-<random>/       a per-run copy of a busy durable workspace (policy ``fork``)
    .locks/<scope>/<key>.lock      the lock (and last-outcome record) of a durable workspace

Why the scopes live in separate trees: an ``agent`` workspace must never contain the
``agent-user`` workspaces of that agent's users, or a shared-scope run could read every user's
files.

Durable workspaces are guarded by a real ``flock`` on the lock file, held from provision to
finalize, so the policy works across processes and controllers: ``queue`` waits for the holder,
``fail`` refuses with ``sandbox-failed``, ``fork`` gives this run a copy of the workspace instead.

Keys (agent, user) are validated before any path is built - no separators, no ``..``, no absolute
paths, no control characters - and every directory under the root is checked not to be a symlink,
so a planted link cannot move a workspace outside the root or onto another agent's directory.
Errors are one line with a fixed reason and a fixed hint; the offending value is never echoed.

The provider cannot enforce a network policy, so anything but ``open`` is ``policy-refused``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from attrs import define
from harness_hookspecs import HarnessError, SandboxHandle, SandboxRequest
from harness_hookspecs.models import SANDBOX_OUTCOMES

NAME = "local"
ENV_ROOT = "HARNESS_WORKSPACES"
LOCK_DIR = ".locks"
KEEP_POLICIES = ("never", "failure", "always")

#: A workspace key component: starts with a letter or digit (so never ``.``/``..``/``-x``).
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_POLL_MIN = 0.01
_POLL_MAX = 0.2


def default_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$HARNESS_WORKSPACES``, else ``$XDG_DATA_HOME/harness-core/workspaces``, else ``~/.local/share/...``."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_ROOT)
    if configured:
        return Path(configured).expanduser()
    data = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "harness-core" / "workspaces"


def validate_key(kind: str, value: object) -> str:
    """Return ``value`` if it is a safe single path component, else raise ``invalid-request``."""
    if value is None or value == "":
        raise HarnessError("invalid-request", f"this workspace scope needs a {kind}")
    if not isinstance(value, str):
        raise HarnessError("invalid-request", f"workspace key {kind} must be a string")
    if _CONTROL.search(value):
        raise HarnessError("invalid-request", f"workspace key {kind} contains control characters")
    if value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value):
        raise HarnessError("invalid-request", f"workspace key {kind} must not be an absolute path")
    parts = re.split(r"[/\\]", value)
    if any(part in (".", "..") for part in parts):
        raise HarnessError("invalid-request", f"workspace key {kind} must not traverse paths")
    if len(parts) > 1:
        raise HarnessError(
            "invalid-request", f"workspace key {kind} must not contain a path separator"
        )
    if not _KEY.match(value):
        raise HarnessError(
            "invalid-request",
            f"workspace key {kind} must be 1-128 letters, digits or . _ - @ + (not leading)",
        )
    return value


def _session_component(session_id: str) -> str:
    if _KEY.match(session_id) and len(session_id) <= 64:
        return session_id
    return "s" + hashlib.sha256(session_id.encode()).hexdigest()[:31]


def _symlink_escape() -> HarnessError:
    return HarnessError("sandbox-failed", "a symlink under the workspace root was refused")


def _ensure_dir(root: Path, parts: tuple[str, ...]) -> Path:
    """Create ``root/parts...`` (mode 0700), refusing any symlink below the (resolved) root."""
    path = root
    for part in parts:
        path = path / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise _symlink_escape()
        if not stat.S_ISDIR(info.st_mode):
            raise HarnessError("sandbox-failed", "a workspace path exists and is not a directory")
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        raise _symlink_escape()
    return path


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _copy_tolerant(src: str, dst: str) -> None:
    # A fork copies a workspace another run is writing: files may vanish mid-copy.
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(src, dst, follow_symlinks=False)


def _copy_workspace(source: Path, target: Path) -> None:
    try:
        shutil.copytree(
            source,
            target,
            symlinks=True,  # links are copied as links, never followed out of the workspace
            copy_function=_copy_tolerant,
            dirs_exist_ok=True,
        )
    except shutil.Error as error:
        missing = all(
            isinstance(entry, tuple) and len(entry) == 3 and "No such file" in str(entry[2])
            for entry in (error.args[0] if error.args else [])
        )
        if not missing:
            raise


@define
class LocalState:
    """Provider-private state carried on the handle until finalize."""

    kind: str  # "run" | "durable" | "fork"
    scope: str
    root: Path
    path: Path
    session_id: str
    keep: str = "never"
    lock_fd: int | None = None
    durable: Path | None = None
    finalized: bool = False
    outcome: str | None = None


class LocalSandboxProvider:
    """Sandbox provider ``local``: scoped workspace directories, no process isolation."""

    name = NAME

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        queue_timeout: float | None = None,
        keep: str = "never",
    ) -> None:
        if keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {', '.join(KEEP_POLICIES)}")
        self._root = Path(root).expanduser() if root is not None else None
        self.queue_timeout = queue_timeout
        self.keep = keep

    # -- paths ------------------------------------------------------------------------------

    def root_for(self, config: Mapping[str, Any] | None = None) -> Path:
        """The resolved root: config ``root``, else the constructor's, else :func:`default_root`."""
        configured = (config or {}).get("root")
        if configured is not None and not isinstance(configured, str | os.PathLike):
            raise HarnessError("invalid-request", "sandbox config root must be a path")
        root = (
            Path(configured).expanduser()
            if configured is not None
            else (self._root if self._root is not None else default_root())
        )
        if not root.is_absolute():
            root = Path.cwd() / root
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            raise HarnessError("sandbox-failed", "the workspace root cannot be created") from None
        return Path(os.path.realpath(root))

    @staticmethod
    def durable_key(scope: str, agent: str | None, user: str | None) -> tuple[str, ...]:
        """The validated path components of a durable workspace (below the root)."""
        if scope == "agent":
            return ("agent", validate_key("agent", agent))
        if scope == "agent-user":
            return ("agent-user", validate_key("agent", agent), validate_key("user", user))
        raise HarnessError("invalid-request", "only agent and agent-user scopes are durable")

    def workspace_path(
        self,
        scope: str,
        agent: str | None,
        user: str | None,
        config: Mapping[str, Any] | None = None,
    ) -> Path:
        """Where the durable workspace of ``scope`` for (agent, user) lives (not created)."""
        return self.root_for(config).joinpath(*self.durable_key(scope, agent, user))

    def last_outcome(
        self,
        scope: str,
        agent: str | None,
        user: str | None,
        config: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """The record the last finalize wrote for a durable workspace, if any."""
        key = self.durable_key(scope, agent, user)
        lock = self.root_for(config).joinpath(LOCK_DIR, *key[:-1], key[-1] + ".lock")
        try:
            text = lock.read_text(encoding="utf-8")
        except OSError:
            return None
        try:
            record = json.loads(text) if text.strip() else None
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    # -- provision --------------------------------------------------------------------------

    async def provision(self, request: SandboxRequest) -> SandboxHandle:
        spec = request.spec
        if spec.network != "open":
            raise HarnessError(
                "policy-refused", "the local sandbox cannot enforce a network policy"
            )
        config = spec.config
        keep = config.get("keep", self.keep)
        if keep not in KEEP_POLICIES:
            raise HarnessError(
                "invalid-request", "sandbox config keep must be never|failure|always"
            )
        timeout = config.get("queue_timeout", self.queue_timeout)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0
        ):
            raise HarnessError("invalid-request", "sandbox config queue_timeout must be seconds")
        # Validate keys before touching the filesystem.
        key = (
            self.durable_key(spec.scope, request.agent, request.user) if spec.scope != "run" else ()
        )
        root = self.root_for(config)
        if spec.scope == "run":
            path = await anyio.to_thread.run_sync(self._fresh, root, "run", request.session_id)
            state = LocalState(
                kind="run",
                scope="run",
                root=root,
                path=path,
                session_id=request.session_id,
                keep=keep,
            )
            return self._handle(state)
        return await self._provision_durable(request, root, key, keep, timeout)

    def _fresh(self, root: Path, tree: str, session_id: str) -> Path:
        parent = _ensure_dir(root, (tree,))
        return Path(tempfile.mkdtemp(prefix=_session_component(session_id) + "-", dir=parent))

    async def _provision_durable(
        self,
        request: SandboxRequest,
        root: Path,
        key: tuple[str, ...],
        keep: str,
        timeout: float | None,
    ) -> SandboxHandle:
        policy = request.spec.concurrency
        durable = _ensure_dir(root, key)

        def handle(kind: str, path: Path, lock_fd: int | None) -> SandboxHandle:
            """A handle on the durable workspace itself (holding its lock) or on a fork of it."""
            return self._handle(
                LocalState(
                    kind=kind,
                    scope=request.spec.scope,
                    root=root,
                    path=path,
                    session_id=request.session_id,
                    keep=keep,
                    lock_fd=lock_fd,
                    durable=durable,
                )
            )

        lock_parent = _ensure_dir(root, (LOCK_DIR, *key[:-1]))
        lock_path = lock_parent / (key[-1] + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise _symlink_escape() from None
            raise HarnessError("sandbox-failed", "the workspace lock cannot be opened") from None
        try:
            acquired = _try_lock(fd)
            if not acquired and policy == "fail":
                raise HarnessError(
                    "sandbox-failed",
                    "the durable workspace is in use by another run (concurrency fail; "
                    "use queue to wait or fork to work on a copy)",
                )
            if not acquired and policy == "fork":
                os.close(fd)
                fd = -1
                path = await anyio.to_thread.run_sync(self._fork, root, durable, request.session_id)
                return handle("fork", path, None)
            if not acquired:
                await self._wait_for(fd, timeout)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return handle("durable", durable, fd)

    async def _wait_for(self, fd: int, timeout: float | None) -> None:
        delay = _POLL_MIN
        try:
            with anyio.fail_after(timeout):
                while not _try_lock(fd):
                    await anyio.sleep(delay)
                    delay = min(delay * 2, _POLL_MAX)
        except TimeoutError:
            raise HarnessError(
                "sandbox-failed", "timed out waiting for the durable workspace (concurrency queue)"
            ) from None

    def _fork(self, root: Path, durable: Path, session_id: str) -> Path:
        target = self._fresh(root, "fork", session_id)
        try:
            _copy_workspace(durable, target)
        except OSError:
            shutil.rmtree(target, ignore_errors=True)
            raise HarnessError(
                "sandbox-failed", "the durable workspace could not be copied for a fork"
            ) from None
        return target

    def _handle(self, state: LocalState) -> SandboxHandle:
        return SandboxHandle(provider=self.name, workspace=os.fspath(state.path), state=state)

    # -- finalize ---------------------------------------------------------------------------

    async def finalize(self, handle: SandboxHandle, outcome: str) -> None:
        state = handle.state
        if not isinstance(state, LocalState) or state.finalized:
            return
        state.finalized = True
        state.outcome = outcome if outcome in SANDBOX_OUTCOMES else "failure"
        await anyio.to_thread.run_sync(self._finalize, state)

    def _finalize(self, state: LocalState) -> None:
        if state.kind == "durable":
            fd = state.lock_fd
            state.lock_fd = None
            if fd is None:
                return
            try:
                record = {
                    "session_id": state.session_id,
                    "outcome": state.outcome,
                    "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
                data = (json.dumps(record) + "\n").encode()
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, data, 0)
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        keep = state.keep == "always" or (state.keep == "failure" and state.outcome != "success")
        if keep:
            return
        real = Path(os.path.realpath(state.path))
        if state.root in real.parents:  # never delete anything outside the root
            shutil.rmtree(state.path, ignore_errors=True)
