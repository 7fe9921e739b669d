"""Load an exported session bundle (:mod:`harness_core.export`) into a ledger.

Ids are kept (the session id, every event id and sequence), so an export imported into an empty
ledger exports equal again. The bundle is read as a stream, twice, in bounded memory (one event
at a time, never the whole file): a first pass checks all of it - a bundle that is not JSON
(truncated), of another format or version, whose events are not this session's gap-free
sequence 1..N, or whose session id is already in the ledger is refused with one
``invalid-request`` line and nothing written - and takes its SHA-256 digest; the second pass
writes it.

All or nothing: a store that can (:class:`ImportsAtomically`, the SQLite store) writes the
record and every event in one transaction, so an import that fails (an event id another
session holds) or is killed leaves nothing behind, and importing the bundle again starts anew.
Any other store gets a journalled import: the bundle's digest is recorded (``journal``, a file
under the state directory) before the first write and removed after the last; an import killed
midway is finished by importing the *same* bundle again (same digest) - never another bundle,
such as an extension of a stored session.

The host's redaction is applied to what is imported: an event string or config value holding a
credential this host knows (or a key shape) is stored redacted, as a live session's would be.
An imported session is stored closed (read, replay, export it; it cannot be resumed): what a
bundle says to run is not this host's to run.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import attrs
from harness_hookspecs import Event, HarnessError, LedgerStore, SessionRecord
from harness_hookspecs.bounds import SESSION_ID_MAX, TURN_ID_MAX, has_control, is_name
from harness_hookspecs.names import SEED_001_NAMES, normalize_event

from .clock import timestamp_ok
from .export import EXPORT_FORMAT, EXPORT_VERSION
from .redaction import Redactor
from .serialize import event_from_dict, record_from_dict
from .session_config import stored_config

#: Events written per batch (the only events held in memory at once while writing).
BATCH = 512
#: The largest single JSON value (an event) the reader holds; past it the bundle is refused.
VALUE_MAX = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


@runtime_checkable
class ImportsAtomically(Protocol):
    """A ledger store that writes a new session and all its events in one transaction."""

    def import_session(self, record: SessionRecord, batches: Iterable[Sequence[Event]]) -> None:
        """Write ``record`` and every event of ``batches`` (in order) all or nothing;
        ``invalid-request`` when the session id or an event id is already in the ledger."""


@attrs.frozen
class Bundle:
    """A checked bundle: its record, its event count and digest, and where to read it again."""

    record: SessionRecord
    count: int
    digest: str
    path: str

    def events(self) -> Iterator[Event]:
        """The bundle's events, read again from its file (checked by :func:`load_bundle_file`;
        a file changed since is ``invalid-request`` at its end)."""
        digest = hashlib.sha256()
        with open(self.path, "rb") as handle:
            for row in _walk(_Reader(handle, digest.update), lambda _key, _value: None):
                yield event_from_dict(in_our_names(row))
        if digest.hexdigest() != self.digest:
            raise HarnessError("invalid-request", "the bundle file changed while importing")


def in_our_names(row: Any) -> Any:
    """An event row with seed 001's type name (and its fields) normalized to ours (see
    :mod:`harness_hookspecs.names`); any other row as it is."""
    kind = row.get("type") if isinstance(row, Mapping) else None
    if not isinstance(kind, str) or kind not in SEED_001_NAMES:
        return row
    payload = row.get("payload")
    kind, fields = normalize_event(kind, payload if isinstance(payload, Mapping) else {})
    return {**row, "type": kind, "payload": fields}


class _Bad(Exception):
    pass


class _Reader:
    """JSON values read one at a time from a binary file, in bounded memory."""

    def __init__(self, handle: IO[bytes], seen: Callable[[bytes], object]) -> None:
        self._handle = handle
        self._seen = seen
        self._decode = codecs.getincrementaldecoder("utf-8")().decode
        self._decoder = json.JSONDecoder()
        self.buffer = ""
        self.pos = 0
        self.eof = False

    def fill(self) -> bool:
        if self.eof:
            return False
        data = self._handle.read(_CHUNK)
        self._seen(data)
        self.eof = not data
        try:
            text = self._decode(data, final=self.eof)
        except UnicodeDecodeError:
            raise _Bad from None
        if len(self.buffer) - self.pos > VALUE_MAX:
            raise _Bad
        self.buffer = self.buffer[self.pos :] + text
        self.pos = 0
        return True

    def peek(self) -> str:
        while True:
            buffer, pos = self.buffer, self.pos
            while pos < len(buffer) and buffer[pos] in " \t\n\r":
                pos += 1
            self.pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self.fill():
                return ""

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise _Bad
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self.buffer, self.pos)
            except RecursionError:  # nested past the interpreter's depth: no bundle of ours
                raise _Bad from None
            except ValueError:
                if not self.fill():
                    raise _Bad from None
                continue
            if end == len(self.buffer) and not self.eof and self.fill():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value


def _walk(
    reader: _Reader,
    top: Callable[[str, Any], None],
    first_key: Callable[[str], object] | None = None,
) -> Iterator[Any]:
    """The rows of the bundle's ``events`` array, one at a time; every other top-level value
    goes to ``top`` (an array's elements are read one by one and dropped: ``turns`` may be as
    large as the events); ``first_key`` is told the object's first key as soon as it is read."""
    try:
        reader.take("{")
        keys: set[str] = set()
        if reader.peek() == "}":
            reader.take("}")
        else:
            while True:
                key = reader.value()
                if not isinstance(key, str) or key in keys:
                    raise _Bad
                if first_key is not None and not keys:
                    first_key(key)
                keys.add(key)
                reader.take(":")
                if reader.peek() == "[":
                    reader.take("[")
                    if reader.peek() == "]":
                        reader.take("]")
                    else:
                        while True:
                            item = reader.value()
                            if key == "events":
                                yield item
                            following = reader.peek()
                            reader.take(following if following in ",]" else ",")
                            if following == "]":
                                break
                    top(key, [] if key != "events" else None)
                else:
                    top(key, reader.value())
                following = reader.peek()
                reader.take(following if following in ",}" else ",")
                if following == "}":
                    break
        if reader.peek() != "":
            raise _Bad
    except _Bad:
        raise HarnessError("invalid-request", "the bundle is not JSON (truncated?)") from None


def envelope_ok(row: Mapping[str, Any]) -> bool:
    """Whether a bundle row's envelope is one the runtime could have stamped: the runtime
    trusts stored envelopes (``event_from_dict`` takes any value as text), so a bundle's are
    checked here - ids bounded text without control characters, an integer sequence, an
    ISO 8601 timestamp with a zone (readers compute durations and offsets from it)."""
    sequence = row.get("sequence")
    return (
        type(sequence) is int
        and _text_ok(row.get("event_id"), 256)
        and _text_ok(row.get("session_id"), SESSION_ID_MAX)
        and _text_ok(row.get("turn_id"), TURN_ID_MAX, optional=True)
        and _text_ok(row.get("parent_event_id"), 256, optional=True)
        and is_name(row.get("harness"))
        and timestamp_ok(row.get("timestamp"))
    )


def _text_ok(value: Any, limit: int, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, str) and 1 <= len(value) <= limit and not has_control(value)


def first_key(path: str) -> str | None:
    """The first key of the JSON object in the file at ``path`` (``None``: not one, or the
    file cannot be read): tells an export of ours from a SuperQode one without reading on."""
    try:
        with open(path, "rb") as handle:
            reader = _Reader(handle, lambda _data: None)
            reader.take("{")
            key = reader.value()
    except (OSError, _Bad):
        return None
    return key if isinstance(key, str) else None


def _check_rows(
    reader: _Reader, top: dict[str, Any], first_key: Callable[[str], object] | None = None
) -> tuple[int, tuple[str, str] | None]:
    """The streamed pass of :func:`load_bundle_file`: the event count and the first event's
    (session id, harness), the other top-level values into ``top``; ``invalid-request`` where
    the bundle is refused. Ends at the first event once ``top`` names another format (the
    caller refuses it)."""
    count = 0
    first: tuple[str, str] | None = None
    try:
        if reader.peek() not in ("{", ""):
            raise HarnessError("invalid-request", f"the file is not a {EXPORT_FORMAT} bundle")
        # the format is known from the first keys of an export: fail early on another file
        for row in _walk(reader, top.__setitem__, first_key):
            if top.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
                break
            if not isinstance(row, Mapping):
                raise HarnessError("invalid-request", "the bundle holds a malformed record")
            try:
                event = event_from_dict(in_our_names(row))
            except HarnessError:
                raise HarnessError(
                    "invalid-request", "the bundle holds a malformed record"
                ) from None
            if not envelope_ok(row):
                raise HarnessError("invalid-request", "the bundle holds a malformed event envelope")
            count += 1
            if first is None:
                first = (event.session_id, event.harness)
            elif (event.session_id, event.harness) != first:
                raise HarnessError("invalid-request", "the bundle holds another session's event")
            if event.sequence != count:
                raise HarnessError("invalid-request", "the bundle's event sequence has a gap")
    except HarnessError as error:
        if top.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
            raise HarnessError(
                "invalid-request", f"the file is not a {EXPORT_FORMAT} bundle"
            ) from None
        raise error from None
    return count, first


def load_bundle_file(path: str) -> Bundle:
    """Check the bundle at ``path`` (one streamed pass); ``invalid-request`` with a one-line
    hint when it is unusable."""
    digest = hashlib.sha256()
    top: dict[str, Any] = {}
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the generator
    except OSError as error:  # the path and the OS's reason: the user's own file, no secret
        reason = error.strerror or type(error).__name__
        raise HarnessError(
            "invalid-request", f"cannot read the bundle {path[-160:]} ({reason})"
        ) from None
    with handle:
        count, first = _check_rows(_Reader(handle, digest.update), top)
    if top.get("format") != EXPORT_FORMAT:
        raise HarnessError("invalid-request", f"the file is not a {EXPORT_FORMAT} bundle")
    if top.get("version") != EXPORT_VERSION:
        raise HarnessError(
            "invalid-request", f"bundle version {top.get('version')!r} is not {EXPORT_VERSION}"
        )
    if "events" not in top or top["events"] is not None:  # None: it was an array, streamed
        raise HarnessError("invalid-request", "the bundle has no event list")
    session = top.get("session")
    if not isinstance(session, Mapping):
        raise HarnessError("invalid-request", "the bundle has no session record")
    try:
        record = record_from_dict(session)
    except HarnessError:
        raise HarnessError("invalid-request", "the bundle holds a malformed record") from None
    if first is not None and first != (record.ref.session_id, record.ref.harness):
        raise HarnessError("invalid-request", "the bundle holds another session's event")
    return Bundle(record=record, count=count, digest=digest.hexdigest(), path=path)


class _Refused(Exception):
    """The copy holds enough for the file's check to refuse it: copy no more."""


def spool(stream: IO[bytes], directory: str | None = None) -> str:
    """Copy a bundle read from a pipe to a file (read twice, in bounded memory); the caller
    removes it and checks the copy as it checks a file given by its path.

    The copy stops as soon as what it holds is refused as a file would be - not a JSON object,
    broken JSON, a value past :data:`VALUE_MAX`, a SuperQode bundle past its ``FILE_MAX`` - so a
    huge or endless wrong input is never written to disk whole, and the check of the copy
    gives the file's own one-line error."""
    handle, path = tempfile.mkstemp(prefix="harness-import-", suffix=".json", dir=directory)
    with os.fdopen(handle, "wb") as out:
        try:
            _copy_checked(stream, out.write)
        except (_Refused, HarnessError):
            pass  # the copy holds what makes the check refuse it
    return path


def _copy_checked(stream: IO[bytes], write: Callable[[bytes], object]) -> None:
    """Copy ``stream`` through ``write`` while checking it as :func:`load_bundle_file` does
    (``HarnessError`` where that refuses it; it may end early, at another format); a SuperQode
    bundle (read whole, not streamed) is copied as it is, up to one chunk past its size cap
    (``_Refused``)."""
    from .superqode_bundle import FILE_MAX, FIRST_KEYS

    class SuperQode(Exception):
        pass

    def first(key: str) -> None:
        if key in FIRST_KEYS:
            raise SuperQode

    copied = 0

    def keep(data: bytes) -> None:
        nonlocal copied
        copied += len(data)
        write(data)

    try:
        _check_rows(_Reader(stream, keep), {}, first)
    except SuperQode:
        while copied <= FILE_MAX:
            data = stream.read(_CHUNK)
            if not data:
                return
            keep(data)
        raise _Refused from None


def _redacted(events: Iterable[Event], redactor: Redactor) -> Iterator[Event]:
    for event in events:
        payload = redactor.payload(event.payload)
        yield event if payload is event.payload else attrs.evolve(event, payload=payload)


def _batches(events: Iterable[Event]) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class LoadedBundle(Protocol):
    """A checked bundle, ours (:class:`Bundle`) or another format's converted to our events
    (:class:`harness_core.superqode_bundle.SuperQodeBundle`)."""

    @property
    def record(self) -> SessionRecord: ...
    @property
    def count(self) -> int: ...
    @property
    def digest(self) -> str: ...
    def events(self) -> Iterator[Event]: ...


def load_any_bundle(path: str) -> LoadedBundle:
    """The bundle at ``path``: a SuperQode Harness Protocol v1 export (recognised by its first
    key) or ours; either is checked whole before anything is written."""
    from .superqode_bundle import FIRST_KEYS, load_superqode_file

    if first_key(path) in FIRST_KEYS:
        return load_superqode_file(path)
    return load_bundle_file(path)


def import_bundle(
    store: LedgerStore,
    bundle: LoadedBundle,
    *,
    redactor: Redactor | None = None,
    journal: Path | None = None,
) -> None:
    """Write ``bundle`` into ``store``, all or nothing (see the module docstring); refused
    (nothing written) if its session id is there - unless the store is not atomic and
    ``journal`` says an import of this very bundle was interrupted, which this one finishes."""
    redactor = redactor or Redactor()
    # Stored closed: a bundle is data, not authority. Its config (a stdio-jsonl command, a CLI
    # path) and workspace would run on a resume, and an open one with a future created_at was
    # what `harness run -c` continued.
    record = attrs.evolve(
        bundle.record,
        config=stored_config(bundle.record.config, redactor),
        status="closed",
        imported=True,
    )
    session_id = record.ref.session_id
    events = _redacted(bundle.events(), redactor)
    if isinstance(store, ImportsAtomically):
        store.import_session(record, _batches(events))
        return
    marker = (
        None
        if journal is None
        else journal / f"{hashlib.sha256(session_id.encode()).hexdigest()[:32]}.json"
    )
    stored = store.last_sequence(session_id)
    existing = store.get_session(session_id)
    clash = existing is not None and existing != record
    if (existing is not None or stored) and (clash or not _journalled(marker, bundle)):
        raise HarnessError("invalid-request", "the ledger already has this session id")
    if marker is not None:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"session_id": session_id, "digest": bundle.digest}))
    if existing is None:
        store.create_session(record)
    skipped = 0
    for batch in _batches(events):
        if skipped + len(batch) <= stored:  # written before the interruption
            skipped += len(batch)
            continue
        store.append(batch[max(0, stored - skipped) :])
        skipped += len(batch)
        store.flush()
    store.flush()
    if marker is not None:
        marker.unlink(missing_ok=True)


def _journalled(marker: Path | None, bundle: LoadedBundle) -> bool:
    """Whether an import of this same bundle (same digest) began and did not finish."""
    if marker is None:
        return False
    try:
        began = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(began, dict) and began.get("digest") == bundle.digest


def summary(bundle: LoadedBundle) -> dict[str, Any]:
    return {
        "session_id": bundle.record.ref.session_id,
        "harness": bundle.record.ref.harness,
        "events": bundle.count,
    }
