"""Workspace checkpoints: a shadow git repository outside the workspace, one per session.

The technique Cline and Claude Code use: the runtime snapshots the workspace's files into a git
object store of its own (``<state_root>/checkpoints/<digest of the session id>``), with
``GIT_DIR`` there and ``GIT_WORK_TREE`` the workspace, so the user's own ``.git`` is never read
or written (git never tracks a ``.git`` directory). A snapshot is a commit (its id is the
checkpoint's, ``ckpt_<sha>``); the files a turn changed are the ``--numstat`` of the commits
around it; a rewind restores the files of a checkpoint byte for byte (content, executable bit,
symlinks) and removes the files the checkpoint did not have.

What a snapshot leaves out: what the workspace's ``.gitignore`` files ignore, the patterns of
:attr:`CheckpointSettings.ignore`, and files over :attr:`CheckpointSettings.max_file_bytes`
(large binaries); a rewind leaves those untouched. A workspace whose files add up to more than
:attr:`CheckpointSettings.max_bytes` is not snapshotted (``limit-exceeded``), and git gets
:attr:`CheckpointSettings.timeout` seconds per command (``timeout``): never a hang.

A rewind is journaled: the target is written to ``REWIND`` (atomically) before the first file
is touched and removed after the last; whoever opens the store next finishes a rewind a killed
process left half done (:meth:`CheckpointStore.recover`), so the workspace is found either as it
was before the rewind (killed before the journal) or as the checkpoint has it. A restore given
a ``note`` (the controller's: the ``session.rewound`` it is about to record) keeps the journal,
note included, until :meth:`CheckpointStore.settle`: the controller removes it once the event
is durable, and a controller resuming the session after a kill records it from the note.

Everything here blocks (git runs as a child process): the controller calls it in a worker
thread.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen
from harness_hookspecs import HarnessError
from harness_hookspecs.values import Value

from .digests import sha256_hex

__all__ = [
    "CHECKPOINT_PREFIX",
    "JOURNAL",
    "CheckpointSettings",
    "CheckpointStore",
    "store_directory",
]

#: A checkpoint id is this prefix and the snapshot's commit id.
CHECKPOINT_PREFIX = "ckpt_"
#: The rewind journal's file name in a store's directory.
JOURNAL = _JOURNAL = "REWIND"
_MiB = 1024 * 1024
#: ``setpriv --pdeathsig KILL``: a git the runtime started dies with it (a rewind killed with
#: SIGKILL leaves no git writing the workspace behind the next process's recovery). Looked up
#: when the first git runs, not at import (a run without checkpoints never needs it).
_dies_with_us: tuple[str, ...] | None = None


def _setpriv_prefix() -> tuple[str, ...]:
    global _dies_with_us
    if _dies_with_us is None:
        import shutil

        setpriv = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
        _dies_with_us = (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()
    return _dies_with_us


def _positive(instance: object, attribute: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{getattr(attribute, 'name', 'value')} must be a positive number")


def _patterns(value: Iterable[str]) -> tuple[str, ...]:
    # a function, not the ``tuple`` builtin: attrs reads a builtin converter's signature by
    # tokenizing its text (about 3 ms of every process that imports this module)
    return tuple(value)


@frozen(repr=False, eq=False)
class CheckpointSettings(Value):
    """How workspace checkpoints are taken (``Controller(checkpoints=...)``)."""

    #: snapshot the workspace at each turn's start and end (``checkpoint.created`` events);
    #: off, a checkpoint is taken only when asked (``Controller.checkpoint``)
    on_turns: bool = True
    #: the most the snapshotted files may add up to, in bytes (default 512 MiB)
    max_bytes: int = field(default=512 * _MiB, validator=_positive)
    #: files larger than this are left out of every snapshot (default 50 MiB)
    max_file_bytes: int = field(default=50 * _MiB, validator=_positive)
    #: gitignore patterns left out besides the workspace's own ``.gitignore`` rules
    ignore: tuple[str, ...] = field(default=(), converter=_patterns)
    #: seconds one git command may take
    timeout: float = field(default=300.0, validator=_positive)


def store_directory(state_root: Path, session_id: str) -> Path:
    """Where session ``session_id``'s checkpoint store lives (outside any workspace)."""
    return state_root / "checkpoints" / sha256_hex(session_id.encode())[:32]


def checkpoint_commit(checkpoint_id: str) -> str:
    """The commit id inside a checkpoint id (``invalid-request`` for anything else)."""
    commit = checkpoint_id[len(CHECKPOINT_PREFIX) :]
    if not checkpoint_id.startswith(CHECKPOINT_PREFIX) or not _is_hex(commit):
        raise HarnessError("invalid-request", f"{checkpoint_id[:80]!r} is not a checkpoint id")
    return commit


def _is_hex(text: str) -> bool:
    return 4 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)


class CheckpointStore:
    """One session's shadow repository over its workspace."""

    def __init__(
        self,
        directory: Path,
        workspace: str | os.PathLike[str],
        settings: CheckpointSettings,
        protected: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        """``protected``: the runtime's own files (the ledger and its siblings, the state
        directory, the logs), never snapshotted nor touched by a rewind when they sit inside
        the workspace (a rewind must not put an old ledger back)."""
        self.directory = Path(directory).absolute()
        self.workspace = Path(workspace).resolve()
        self.settings = settings
        self._ready = False
        self._protected = [
            "/" + _glob_escape(relative) + "*"
            for relative in (_inside(self.workspace, path) for path in (*protected, self.directory))
            if relative is not None
        ]

    # -- git ------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        # The user's configuration and repositories are never consulted.
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.directory),
            "LANG": "C",
            "GIT_DIR": str(self.directory / "git"),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.directory / "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "harness",
            "GIT_AUTHOR_EMAIL": "harness@localhost",
            "GIT_COMMITTER_NAME": "harness",
            "GIT_COMMITTER_EMAIL": "harness@localhost",
            "GIT_TERMINAL_PROMPT": "0",
        }

    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        env = self._env()
        if args[0] == "init":  # creates GIT_DIR itself, as a plain (bare) repository
            del env["GIT_DIR"], env["GIT_WORK_TREE"]
        try:
            done = subprocess.run(
                [*_setpriv_prefix(), "git", *args],
                env=env,
                cwd=self.workspace,
                input=input,
                capture_output=True,
                timeout=self.settings.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HarnessError("timeout", "the workspace checkpoint took too long") from None
        except OSError:
            raise HarnessError("provider-unavailable", "git is needed for checkpoints") from None
        if done.returncode != 0:
            raise HarnessError("provider-failed", f"git {args[0]} failed in the checkpoint store")
        return done.stdout

    def _open(self) -> None:
        if self._ready:
            return
        if not self.workspace.is_dir():
            raise HarnessError("invalid-request", "the workspace directory does not exist")
        git_dir = self.directory / "git"
        if not (git_dir / "HEAD").exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q", "--bare", str(git_dir))
            for key, value in (
                ("core.autocrlf", "false"),
                ("core.filemode", "true"),
                ("core.symlinks", "true"),
                ("core.quotepath", "false"),
                ("gc.auto", "0"),
                ("core.bare", "false"),
            ):
                self._git("config", key, value)
        self._ready = True
        self.recover()

    # -- snapshot -------------------------------------------------------------------------

    def snapshot(self, message: str = "checkpoint") -> str:
        """Snapshot the workspace; returns the checkpoint id."""
        self._open()
        tree = self._write_tree()
        parents: list[str] = []
        head = self._head()
        if head is not None:
            parents = ["-p", head]
        commit = self._git("commit-tree", tree, *parents, "-m", message).decode().strip()
        self._git("update-ref", f"refs/checkpoints/{commit}", commit)
        self._git("update-ref", "refs/heads/last", commit)
        return CHECKPOINT_PREFIX + commit

    def _head(self) -> str | None:
        try:
            return self._git("rev-parse", "-q", "--verify", "refs/heads/last").decode().strip()
        except HarnessError:
            return None

    def _write_tree(self) -> str:
        """The workspace's files as a tree (the shadow index updated), after the size checks."""
        self._exclude(())  # the configured patterns alone while the files are measured
        self._exclude(self._oversized())
        self._git("add", "-A", "--ignore-errors", ".")
        return self._git("write-tree").decode().strip()

    def _oversized(self) -> list[str]:
        """The files a snapshot leaves out for their size; ``limit-exceeded`` when the rest is
        over the store's limit."""
        listed = self._git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        total, large = 0, []
        for raw in dict.fromkeys(listed.split(b"\0")):
            if not raw:
                continue
            name = os.fsdecode(raw)
            try:
                size = os.lstat(self.workspace / name).st_size
            except OSError:
                continue
            if size > self.settings.max_file_bytes:
                large.append(name)
            else:
                total += size
        if total > self.settings.max_bytes:
            megabytes = self.settings.max_bytes // _MiB
            raise HarnessError(
                "limit-exceeded",
                f"the workspace is over the checkpoint size limit ({megabytes} MiB)",
            )
        return large

    def _exclude(self, large: Sequence[str]) -> None:
        info = self.directory / "git" / "info"
        info.mkdir(parents=True, exist_ok=True)
        patterns = [
            *self.settings.ignore,
            *self._protected,
            *("/" + _glob_escape(name) for name in large),
        ]
        (info / "exclude").write_text("".join(p + "\n" for p in patterns))
        if large:  # files grown past the limit since an earlier snapshot leave the index
            self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", *large)

    # -- reading --------------------------------------------------------------------------

    def changes(self, before: str, after: str) -> list[str]:
        """The files changed from checkpoint ``before`` to ``after`` as git ``--numstat``
        lines (``added<TAB>removed<TAB>path``)."""
        self._open()
        raw = self._git(
            "diff-tree",
            "-r",
            "-z",
            "--numstat",
            "--no-renames",
            checkpoint_commit(before),
            checkpoint_commit(after),
        )
        lines = []
        for entry in raw.split(b"\0"):
            if entry.count(b"\t") >= 2:
                lines.append(os.fsdecode(entry))
        return lines

    def diff(self, before: str, after: str, paths: Sequence[str] = ()) -> str:
        """The full patch from checkpoint ``before`` to ``after`` (optionally of ``paths``)."""
        self._open()
        patch = self._git(
            "diff-tree",
            "-p",
            "-r",
            "--no-renames",
            "--binary",
            checkpoint_commit(before),
            checkpoint_commit(after),
            "--",
            *paths,
        )
        return patch.decode("utf-8", "replace")

    def has(self, checkpoint_id: str) -> bool:
        self._open()
        commit = checkpoint_commit(checkpoint_id)
        try:
            self._git("cat-file", "-e", f"{commit}^{{commit}}")
        except HarnessError:
            return False
        return True

    # -- rewind ---------------------------------------------------------------------------

    def restore(self, checkpoint_id: str, note: Mapping[str, Any] | None = None) -> None:
        """Make the workspace's files those of ``checkpoint_id``, journaled (see the module);
        with a ``note`` the journal stays, holding it, until :meth:`settle`."""
        self._open()
        commit = checkpoint_commit(checkpoint_id)
        if not self.has(checkpoint_id):
            raise HarnessError("invalid-request", "no such checkpoint in this session's store")
        journal = self.directory / _JOURNAL
        scratch = self.directory / (_JOURNAL + ".tmp")
        with open(scratch, "w") as handle:
            handle.write(json.dumps({"commit": commit, "note": note}) if note else commit)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(scratch, journal)
        _sync_directory(self.directory)
        self._apply(commit)
        if note is None:
            self.settle()

    def settle(self) -> None:
        """Remove the rewind journal (the rewind and what its note stood for are done)."""
        (self.directory / _JOURNAL).unlink(missing_ok=True)
        _sync_directory(self.directory)

    def _journal(self) -> tuple[str, dict[str, Any] | None] | None:
        """The journaled rewind: its commit and note (``None``: no rewind journaled)."""
        try:
            text = (self.directory / _JOURNAL).read_text().strip()
        except FileNotFoundError:
            return None
        if not text.startswith("{"):
            return text, None
        data = json.loads(text)
        note = data.get("note")
        return str(data["commit"]), note if isinstance(note, dict) else None

    def recover(self) -> str | None:
        """Finish a rewind a killed process left half done; returns its checkpoint id (the
        journal stays while it holds a note: see :meth:`unfinished`)."""
        journaled = self._journal()
        if journaled is None:
            return None
        commit, note = journaled
        (self.directory / "index.lock").unlink(missing_ok=True)  # the killed git's
        self._ready = True
        self._apply(commit)
        if note is None:
            self.settle()
        return CHECKPOINT_PREFIX + commit

    def unfinished(self) -> dict[str, Any] | None:
        """The note of a rewind whose files are restored (now, if a killed process left them
        half done) but whose note was not settled; ``None`` when there is none."""
        self._open()
        journaled = self._journal()
        if journaled is None:
            return None
        self.recover()  # idempotent: the files as the checkpoint has them
        return journaled[1]

    def _apply(self, commit: str) -> None:
        """Idempotent: remove the files ``commit`` does not have, then write the ones that
        differ from it (only those: a rewind of a few files in a large tree stays quick)."""
        current = self._write_tree()
        listed = self._git(
            "diff-tree", "-r", "-z", "--name-status", "--no-renames", commit, current
        ).split(b"\0")
        gone: list[str] = []
        back: list[bytes] = []
        for status, raw in zip(listed[0::2], listed[1::2], strict=False):
            if status == b"A":  # only in the workspace now
                gone.append(os.fsdecode(raw))
            elif raw:
                back.append(raw)
        for name in gone:
            _remove(self.workspace, name)
        self._git("read-tree", commit)
        if back:
            self._git("checkout-index", "-f", "-q", "-z", "--stdin", input=b"\0".join(back))


def _inside(workspace: Path, path: str | os.PathLike[str]) -> str | None:
    """``path`` relative to ``workspace`` when it is inside it (else ``None``)."""
    resolved = Path(path).resolve()
    if resolved == workspace or workspace not in resolved.parents:
        return None
    return resolved.relative_to(workspace).as_posix()


def _glob_escape(name: str) -> str:
    return "".join("\\" + c if c in "*?[]\\!# " else c for c in name)


def _remove(root: Path, name: str) -> None:
    """Remove the file ``name`` and the directories it leaves empty (up to ``root``)."""
    path = root / name
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        return
    parent = path.parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
