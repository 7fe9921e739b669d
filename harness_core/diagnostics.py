"""The local diagnostic log: what a person debugging a harness needs, kept out of the record.

The ledger, the events and the exports hold fixed reasons only (never raw exception text). What
a harness author needs to see why their harness failed - the exception's class, message and
traceback - goes through stdlib :mod:`logging` (the ``harness_core`` logger) and into one file
per session beside the ledger (``.harness/logs/<session id>.log`` next to
``.harness/ledger.sqlite``), with every secret the session's credentials injected redacted.
``harness logs ID`` prints that file, ``harness run`` says where it is when a turn fails, and
``HARNESS_DEBUG=1`` prints the records on stderr as they happen.

A host keeps control of logging as usual: the records also propagate to its own handlers, and
removing :data:`SESSION_FILES` from the ``harness_core`` logger turns the files off.
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from pathlib import Path
from typing import Any

from harness_hookspecs import HarnessError

from .digests import sha256_hex

__all__ = [
    "LOGGER_NAME",
    "SESSION_FILES",
    "SessionFiles",
    "harness_raised",
    "log_directory",
    "log_directory_for_url",
    "session_log",
]

LOGGER_NAME = "harness_core"
#: a record carrying this attribute (a path) is appended to that session's file
SESSION_LOG_ATTRIBUTE = "harness_session_log"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_PLAIN_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")

logger = logging.getLogger(LOGGER_NAME)


class SessionFiles(logging.Handler):
    """Appends each record that names a session log file to that file (created ``0600``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter(_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        path = getattr(record, SESSION_LOG_ATTRIBUTE, None)
        if path is None:
            return
        try:
            text = self.format(record)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(descriptor, "a", encoding="utf-8", errors="backslashreplace") as file:
                file.write(text + "\n")
        except Exception:  # a full disk costs the diagnostic, never the turn
            return


#: The handler writing the per-session files, installed on the ``harness_core`` logger.
SESSION_FILES = SessionFiles()
if not any(isinstance(h, SessionFiles) for h in logger.handlers):
    logger.addHandler(SESSION_FILES)
    # Without it, Python's last-resort handler would print warnings on stderr of a host that
    # configured no logging; stderr is for HARNESS_DEBUG=1.
    logger.addHandler(logging.NullHandler())


def log_directory(ledger: Any, state_root: Path) -> Path:
    """Where the session logs of ``ledger`` go: ``logs/`` beside a SQLite file or JSONL
    directory, else (memory, a server database) ``logs/`` in the state root."""
    path = getattr(ledger, "path", None)
    if path is None:
        path = getattr(ledger, "directory", None)
    if isinstance(path, str | os.PathLike) and str(path) not in ("", ":memory:"):
        return _beside(str(path))
    return state_root / "logs"


def ledger_files(ledger: Any) -> tuple[str, ...]:
    """The file or directory a local ledger keeps its events in (none for memory or a
    server database): what a workspace checkpoint must leave alone."""
    path = getattr(ledger, "path", None) or getattr(ledger, "directory", None)
    if isinstance(path, str | os.PathLike) and str(path) not in ("", ":memory:"):
        return (os.fspath(path),)
    return ()


def log_directory_for_url(url: str, state_root: Path) -> Path:
    """:func:`log_directory` for a ledger URL, without opening the ledger."""
    from .ledger import path_of

    scheme = url.partition(":")[0]
    if scheme in ("sqlite", "jsonl"):
        path = path_of(url, scheme)
        if path != ":memory:":
            return _beside(path)
    return state_root / "logs"


def _beside(path: str) -> Path:
    # POSIX keeps a leading "//" (sqlite:////abs); one directory must have one spelling.
    absolute = os.path.abspath(path)
    if absolute.startswith("//"):
        absolute = "/" + absolute.lstrip("/")
    return Path(absolute).parent / "logs"


def session_log(directory: Path, session_id: str) -> Path:
    """The log file of one session (an id that is no plain file name is hashed)."""
    name = session_id if _PLAIN_ID.fullmatch(session_id) else sha256_hex(session_id.encode())
    return directory / f"{name}.log"


def harness_raised(
    error: BaseException,
    *,
    directory: Path,
    session_id: str,
    harness: str,
    turn_id: str | None = None,
    redact: Any = None,
) -> None:
    """Log what a harness raised (class, message, traceback) to the session's file. A
    ``HarnessError`` is not: it is the harness's own answer, recorded with its reason and hint.

    ``redact`` (``str -> str``, the session's redactor) is applied to the whole text, so a
    credential the exception happens to quote never reaches the file or the host's handlers.
    """
    if isinstance(error, HarnessError):
        return
    where = f"in turn {turn_id}" if turn_id else "opening the session"
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
    if redact is not None:
        text = redact(text)
    logger.error(
        "harness %s raised %s %s\n%s",
        harness,
        type(error).__name__,
        where,
        text,
        extra={SESSION_LOG_ATTRIBUTE: session_log(directory, session_id), "session_id": session_id},
    )
