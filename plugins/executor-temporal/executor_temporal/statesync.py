"""An adapter's ``state_dir`` travelling between workers through a shared directory.

CLIs keep what a resume needs in the session's state directory (Claude Code: its transcript
under ``projects/``; stdio-jsonl programs: whatever they put in ``HARNESS_STATE_DIR``). Each
worker has its own copy; after every open and turn the worker that ran it publishes a tar
snapshot tagged with the ledger's last sequence, and a worker about to run a turn restores the
snapshot when its copy carries another tag (stale, or never seen). The directory is any path all
workers mount (a volume, NFS); snapshots are replaced atomically (write, then rename).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

#: The tag of the snapshot a local copy was restored from or published as.
MARKER = ".harness-shared-version"


class SharedStateDir:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _paths(self, harness: str, session_id: str) -> tuple[Path, Path]:
        digest = hashlib.sha256(f"{harness}\0{session_id}".encode()).hexdigest()[:32]
        return self.root / f"{digest}.tar", self.root / f"{digest}.version"

    def version(self, harness: str, session_id: str) -> str | None:
        _, tag = self._paths(harness, session_id)
        try:
            return tag.read_text()
        except FileNotFoundError:
            return None

    def publish(self, local: Path, harness: str, session_id: str, version: int) -> None:
        """Snapshot ``local`` as ``version`` (the ledger's last sequence after the write)."""
        archive, tag = self._paths(harness, session_id)
        self.root.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(dir=self.root, suffix=".partial")
        os.close(fd)
        with tarfile.open(scratch, "w") as tar:
            for entry in sorted(local.iterdir()) if local.is_dir() else []:
                if entry.name != MARKER:
                    tar.add(entry, arcname=entry.name)
        os.replace(scratch, archive)
        _write_atomically(tag, str(version))
        local.mkdir(parents=True, exist_ok=True)  # made on first use: may not exist yet
        _write_atomically(local / MARKER, str(version))

    def restore(self, local: Path, harness: str, session_id: str) -> bool:
        """Replace ``local`` with the shared snapshot when it is another version; True if so."""
        shared = self.version(harness, session_id)
        if shared is None:
            return False
        try:
            if (local / MARKER).read_text() == shared:
                return False
        except FileNotFoundError:
            pass
        archive, _ = self._paths(harness, session_id)
        shutil.rmtree(local, ignore_errors=True)
        local.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(local, filter="data")
        _write_atomically(local / MARKER, shared)
        return True


def _write_atomically(path: Path, text: str) -> None:
    scratch = path.with_name(path.name + ".partial")
    scratch.write_text(text)
    os.replace(scratch, path)
