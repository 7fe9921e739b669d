"""Retention: ``harness ledger prune`` archives old, closed sessions, then removes them.

The ledger is append-only; pruning is the one way out, and a narrow one. A session goes only
when it is closed and its last activity (``updated_at``) is older than the cutoff, and only
after its export bundle is on disk: written, fsynced, read back and checked against the
ledger. The store then removes it in one transaction that checks it all again (a session
resumed, or written to, since it was archived is left as it is) and keeps a tombstone; its
triggers refuse every other delete, so everything newer keeps the append-only guarantee.
Open sessions are never pruned, only reported (close or ``harness reconcile`` them first). An
archive is an ordinary export bundle: ``harness import`` brings the session back.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from attrs import frozen
from harness_hookspecs import HarnessError, LedgerStore

from .bundle_import import load_bundle_file
from .export import export_session
from .ledger import PruningStore

#: What happened to a session old enough to prune.
PRUNED = "pruned"
WOULD_PRUNE = "would prune"
LEFT_OPEN = "open"  # left: still open
LEFT_BUSY = "busy"  # left: a writer holds it (or it changed since it was archived)

_AGE = re.compile(r"(\d+)([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


@frozen
class Pruned:
    """One session older than the cutoff: what was done (:data:`PRUNED`, :data:`WOULD_PRUNE`,
    :data:`LEFT_OPEN`, :data:`LEFT_BUSY`), its event count and its archive's path."""

    session_id: str
    updated_at: str
    action: str
    events: int
    archive: str | None


def cutoff(before: str | None = None, older_than: str | None = None) -> str:
    """The cutoff as a ledger timestamp (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, UTC) from ``before``
    (an ISO date or date-time; without an offset, UTC) or ``older_than`` (``30d``, ``12h``,
    ``90m``); ``invalid-request`` naming the value when it is neither."""
    if (before is None) == (older_than is None):
        raise HarnessError(
            "invalid-request", "prune needs one of --before DATE or --older-than AGE"
        )
    if older_than is not None:
        match = _AGE.fullmatch(older_than.strip())
        if match is None:
            raise HarnessError(
                "invalid-request", f"--older-than {older_than[:40]!r} is not an age like 30d"
            )
        moment = datetime.now(UTC) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    else:
        assert before is not None
        try:
            moment = datetime.fromisoformat(before.strip())
        except ValueError:
            raise HarnessError(
                "invalid-request", f"--before {before[:40]!r} is not a date (YYYY-MM-DD)"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def prune(
    store: LedgerStore, *, before: str, archive: Path | None, dry_run: bool = False
) -> list[Pruned]:
    """Archive into ``archive`` and remove every closed session of ``store`` last active
    before ``before`` (a :func:`cutoff`); open ones are reported, not touched. ``dry_run``:
    report, write nothing (``archive`` may then be ``None``)."""
    if not isinstance(store, PruningStore):
        raise HarnessError("unsupported-feature", "this ledger cannot be pruned")
    if archive is None and not dry_run:
        raise HarnessError("invalid-request", "prune needs --archive DIR (bundles go there first)")
    if archive is not None and not dry_run:
        _make_directory(archive)
    found: list[Pruned] = []
    for record in store.list_sessions():
        if not record.updated_at or record.updated_at >= before:
            continue
        session_id = record.session_id
        last = store.last_sequence(session_id)
        if record.status != "closed":
            found.append(Pruned(session_id, record.updated_at, LEFT_OPEN, last, None))
            continue
        if dry_run:
            found.append(Pruned(session_id, record.updated_at, WOULD_PRUNE, last, None))
            continue
        assert archive is not None
        path = _archive(store, session_id, archive)
        try:
            removed = store.prune_session(session_id, archived_through=last)
        except HarnessError as error:
            if error.reason not in ("session-busy", "invalid-request"):
                raise
            found.append(Pruned(session_id, record.updated_at, LEFT_BUSY, last, str(path)))
            continue
        found.append(Pruned(session_id, record.updated_at, PRUNED, removed, str(path)))
    return found


def _archive(store: LedgerStore, session_id: str, directory: Path) -> Path:
    """Write ``session_id``'s export bundle into ``directory`` durably (a temporary file,
    fsync, rename, fsync of the directory) and check it reads back whole."""
    bundle = export_session(store, session_id)
    path = directory / f"{quote(session_id, safe='')}.json"
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(bundle, handle, ensure_ascii=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except OSError as error:
        raise HarnessError(
            "invalid-request",
            f"cannot write the archive {str(path)[-160:]} ({error.strerror or error})",
        ) from None
    written = load_bundle_file(str(path))
    if written.count != len(bundle["events"]) or written.record.session_id != session_id:
        raise HarnessError("ledger-failed", f"the archive {str(path)[-160:]} did not read back")
    return path


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HarnessError(
            "invalid-request",
            f"cannot create the archive directory {str(directory)[-160:]} "
            f"({error.strerror or error})",
        ) from None
