"""The base of a CLI's JSON-lines stream parser: native lines in, contract payloads out.

A subclass maps one decoded JSON object at a time (:meth:`JsonLinesStream.event`) and says how
the turn ended (:meth:`JsonLinesStream.terminal`). The base drops blank lines, counts garbage
(not JSON, not an object, longer than :attr:`JsonLinesStream.max_line`) instead of forwarding it,
and drives a process or a captured stream the same way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import anyio
from harness_hookspecs import Payload, ProcessHandle, TurnFailed, Usage, UsageReported

from .classify import auth_hint

#: A line longer than this is garbage, not parsed (a CLI's event lines are far shorter).
MAX_LINE = 8 * 1024 * 1024
#: Hints for the reasons a stream classifies (the CLI's own text is never forwarded).
HINTS = {
    "authentication-required": "the model endpoint rejected the credentials",
    "provider-unavailable": "the model endpoint was unreachable or overloaded",
}


def count(value: Any) -> int | None:
    """A non-negative integer from a native usage field, else ``None`` (unknown, not zero)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def positive_cost(value: Any) -> float | None:
    """A cost above zero, else ``None`` (CLIs report 0 when no price is configured)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def usage_report(fields: Mapping[str, int | None], **extra: Any) -> UsageReported | None:
    """``usage`` when the CLI reported any token count (absent counts mean unknown, not zero);
    ``extra``: ``requests``, ``cost_usd``."""
    if all(value is None for value in fields.values()):
        return None
    counts: dict[str, Any] = dict(fields)
    return UsageReported(usage=Usage(**counts, **extra))


#: The contract's token counts, in the order :func:`usage_of` takes their native names.
TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def usage_of(native: Any, names: tuple[str | None, ...], **extra: Any) -> UsageReported | None:
    """:func:`usage_report` from a native usage object; ``names``: its keys for the
    :data:`TOKEN_FIELDS` in order (``None``: the CLI does not report that count)."""
    if not isinstance(native, Mapping):
        return None
    fields = {
        field: count(native.get(key)) for field, key in zip(TOKEN_FIELDS, names, strict=True) if key
    }
    return usage_report(fields, **extra)


def json_object(line: bytes, max_line: int = MAX_LINE) -> dict[str, Any] | None:
    """One JSON object from a line; ``None`` for a blank line. Raises ``ValueError`` for
    garbage: not JSON, not an object, or longer than ``max_line``."""
    if len(line) > max_line:
        raise ValueError("line too long")
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except RecursionError:  # nested past the interpreter's depth: garbage like any other
        raise ValueError("nested too deep") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


class JsonLinesStream:
    """Pure (no I/O) parser of one turn's stream; subclasses map their CLI's events."""

    max_line = MAX_LINE
    #: The CLI's name in hints ("claude exited with status 1").
    cli = "the CLI"
    #: The variable the CLI's key is injected as, named in an ``authentication-required`` hint.
    key_var: str | None = None

    def __init__(self) -> None:
        #: A fixed reason that ends the turn now (the rest of the stream is not read).
        self.failure: str | None = None
        #: Lines that were not a JSON object.
        self.garbage = 0
        #: A classified model error that does not stop reading (a later success may clear it).
        self.error: str | None = None
        #: The last complete assistant message (the turn's result text).
        self.last_text: str | None = None
        #: The CLI's own id for the session, once the stream names it.
        self.session_id: str | None = None

    def feed(self, line: bytes) -> list[Payload]:
        try:
            data = json_object(line, self.max_line)
        except ValueError:
            self.garbage += 1
            return []
        return [] if data is None else self.event(data)

    def event(self, data: dict[str, Any]) -> list[Payload]:
        raise NotImplementedError

    def usage(self) -> UsageReported | None:
        return None

    def finished(self) -> bool:
        """Whether the turn's outcome is known (its terminal line was read and answered): the
        relay stops reading there and kills the CLI's process tree at once (``terminate(0)``)
        instead of waiting for the CLI to exit by itself or after a SIGTERM (Node's shutdown
        took 20-150 ms per turn, a SIGKILL 2-20 ms). Only for a CLI whose session state is on
        disk when it writes its terminal line. The exit code is then unknown (``None``): the
        stream's own outcome decides. By default the stream ends at the CLI's exit."""
        return False

    async def respond(self, process: ProcessHandle) -> list[Payload]:
        """After each line: answer what the CLI asked on stdin (a permission request...);
        returns payloads to yield. The default asks nothing (the parser stays pure)."""
        return []

    def terminal(self, exit_code: int | None) -> Payload:
        raise NotImplementedError

    def failed(self, reason: str) -> TurnFailed:
        """A classified failure with a fixed hint."""
        if reason == "authentication-required":
            return TurnFailed(reason=reason, hint=auth_hint(self.cli, self.key_var))
        return TurnFailed(
            reason=reason, hint=HINTS.get(reason, f"{self.cli} reported a model error")
        )

    def unfinished(self, what: str) -> TurnFailed:
        """The stream ended before the turn did: ``what`` says how ("ended without a result")."""
        if self.garbage:
            return TurnFailed(
                reason="provider-failed", hint=f"{self.cli} wrote an unreadable stream"
            )
        return TurnFailed(reason="provider-failed", hint=f"{self.cli} {what}")

    def exit_failure(self, exit_code: int | None) -> TurnFailed | None:
        if exit_code in (0, None):
            return None
        return TurnFailed(
            reason="provider-failed", hint=f"{self.cli} exited with status {exit_code}"
        )

    def ending(self, exit_code: int | None) -> list[Payload]:
        """The usage report (if any) and the terminal payload."""
        usage = self.usage()
        return [*([usage] if usage is not None else []), self.terminal(exit_code)]

    async def relay(
        self, process: ProcessHandle, on_line: Callable[[], None] | None = None
    ) -> AsyncIterator[Payload]:
        """Yield the payloads of ``process``'s stdout; then :attr:`exit_code` is set (``None``
        when it stopped before the CLI exited).

        ``on_line`` runs after each line (to save a native id as soon as it shows). A
        :attr:`failure` or :meth:`finished` stops reading: the runtime kills the process group.
        """
        self.exit_code: int | None = None
        listening = True  # the CLI still reads its stdin
        async for line in process.lines():
            for payload in self.feed(line):
                yield payload
            if on_line is not None:
                on_line()
            if self.failure is not None:
                return
            if listening:
                try:
                    answers = await self.respond(process)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                    # it stopped reading (it is dying): what it wrote, then its exit status,
                    # says why, not our failed write
                    listening, answers = False, []
                for payload in answers:
                    yield payload
            if self.finished():
                await process.terminate(0)
                return
        self.exit_code = await process.wait()

    async def drive(
        self, process: ProcessHandle, remember: Callable[[str | None], None]
    ) -> AsyncIterator[Payload]:
        """:meth:`relay` then :meth:`ending`; ``remember`` gets :attr:`session_id` after each
        line (e.g. :meth:`~harness_cli_kit.state.NativeSession.remember`)."""
        async for payload in self.relay(process, lambda: remember(self.session_id)):
            yield payload
        for payload in self.ending(self.exit_code):
            yield payload

    @classmethod
    def parse(cls, lines: Iterable[bytes], exit_code: int = 0) -> list[Payload]:
        """Parse a whole captured stream (for tests and tooling)."""
        stream = cls()
        out: list[Payload] = []
        for line in lines:
            out.extend(stream.feed(line))
            if stream.failure is not None:
                return [*out, *stream.ending(None)]
        return [*out, *stream.ending(exit_code)]
