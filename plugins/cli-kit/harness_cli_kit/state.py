"""The CLI's own session id, kept in one small JSON file under the session's ``state_dir``.

A CLI that names its sessions itself (a thread id, a native session id) gets that id from its
first turn's stream; later turns and a resume in another process read it back from here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from harness_hookspecs import HarnessError, SessionRef

T = TypeVar("T")

DEFAULT_KEY = "native_session_id"


class NativeSession:
    """One session's native id and the file it is saved in (written atomically)."""

    def __init__(
        self,
        state_dir: str,
        filename: str,
        *,
        key: str = DEFAULT_KEY,
        native_id: str | None = None,
        cli: str = "",
    ) -> None:
        self.path = Path(state_dir) / filename
        self.key = key
        self.native_id = native_id
        #: The CLI binary this session runs (for adapters that check it once per session).
        self.cli = cli
        #: The next id the stream reports replaces :attr:`native_id` (the turn branched the
        #: CLI's conversation into a new native session: a fork or a rewind).
        self.replace = False

    @classmethod
    def create(cls, state_dir: str, filename: str, **kwargs: Any) -> NativeSession:
        """A new session: no native id yet, and a state file that says so (resume finds it)."""
        session = cls(state_dir, filename, **kwargs)
        session.save()
        return session

    @classmethod
    def load(cls, state_dir: str, filename: str, *, what: str, **kwargs: Any) -> NativeSession:
        """The saved session, or ``session-not-found`` naming ``what`` (e.g. "no pi state")."""
        session = cls(state_dir, filename, **kwargs)
        try:
            data = json.loads(session.path.read_text())
        except (OSError, ValueError):
            raise HarnessError("session-not-found", f"{what} for this session") from None
        value = data.get(session.key) if isinstance(data, dict) else None
        session.native_id = value if isinstance(value, str) and value else None
        return session

    def save(self, **extra: Any) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({self.key: self.native_id, **extra}))
        tmp.replace(self.path)

    def remember(self, native_id: str | None, **extra: Any) -> None:
        """Keep the first native id the stream reports (saved at once: a crash keeps it), or
        the new one when :attr:`replace` is set."""
        if native_id and (self.native_id is None or (self.replace and native_id != self.native_id)):
            self.native_id = native_id
            self.replace = False
            self.save(**extra)


class Sessions(dict[str, T]):
    """An adapter's live sessions by contract session id."""

    def of(self, ref: SessionRef) -> T:
        """The session of ``ref``, or ``session-not-found``."""
        session = self.get(ref.session_id)
        if session is None:
            raise HarnessError("session-not-found")
        return session
