"""Structured turn output: the final answer of a turn must match a host's JSON Schema.

The runtime always validates the answer itself (``jsonschema``), whatever the adapter did:

- an adapter with the ``structured-output`` feature hands the schema to its CLI's native
  mechanism and reports the parsed value as ``TurnCompleted.output``;
- otherwise the schema is appended to the prompt the adapter sees (prompt-and-validate) and the
  answer text is parsed as JSON (a fenced ```json block is accepted).

Each answer's verdict is recorded as ``output.validated`` (``passed``, or ``failed`` with the
failing keyword and path - never the answer). A malformed answer is retried in the same session
and the same turn, with the validation error as the next prompt, at most ``retries`` times; then
the turn fails with ``invalid-output``. The
turn keeps exactly one terminal event: the accepted ``turn.completed`` carries ``output``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen
from harness_hookspecs import (
    Event,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    OutputValidated,
    Payload,
    Status,
    TurnCompleted,
    TurnFailed,
)

from .budgets import DEFAULT_OUTPUT_RETRIES  # defined there: the controller needs no more of this
from .schema_check import foreign_keywords, reference_problem

if TYPE_CHECKING:
    import jsonschema  # imported where a schema is compiled: a third of the controller's import

#: Seconds an attempt's processes get to exit before the retry (as at the turn's end).
CLEANUP_GRACE = 0.25
MAX_OUTPUT_RETRIES = 10
_FENCED_BLOCK = re.compile(
    r"^```[a-zA-Z0-9_-]*[ \t]*\n(.*?)\n?```[ \t]*$", re.DOTALL | re.MULTILINE
)
_SAFE_PATH = re.compile(r"[^A-Za-z0-9_.\-\[\]$]")


@frozen
class Verdict:
    """One attempt judged: the accepted value, or a fixed-shape summary of what was wrong."""

    ok: bool
    value: Any = None
    #: for the model's retry prompt (may quote the answer; never recorded in events)
    detail: str = ""
    #: for the ledger: the failing keyword and path only (schema-authored, bounded)
    summary: str = ""


def structured_turn(
    descriptor: HarnessDescriptor, schema: Mapping[str, Any] | None, retries: int
) -> StructuredTurn | None:
    """The turn's structured-output state, or ``None`` without a schema (``invalid-request``
    for a schema that is not one, before anything is recorded)."""
    if schema is None:
        return None
    return StructuredTurn(
        schema, retries=retries, native="structured-output" in descriptor.features
    )


def compile_schema(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for ``schema``; ``invalid-request`` when it is not a JSON Schema."""
    if not isinstance(schema, Mapping):
        raise HarnessError("invalid-request", "the output schema must be a JSON object")
    import jsonschema
    import referencing

    schema = dict(schema)
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        raise HarnessError(
            "invalid-request", "the output schema is not a valid JSON Schema"
        ) from None
    except RecursionError:
        raise HarnessError("invalid-request", "the output schema is nested too deeply") from None
    foreign = foreign_keywords(schema, cls)
    if foreign:
        raise HarnessError(
            "invalid-request", f"the output schema is not a JSON Schema (key {foreign[0][:40]!r})"
        )
    problem = reference_problem(schema)
    if problem is not None:
        raise HarnessError("invalid-request", f"the output schema's {problem}"[:240])
    # An empty registry: nothing is ever retrieved (jsonschema's default fetches a URL).
    validator: jsonschema.protocols.Validator = cls(schema, registry=referencing.Registry())
    return validator


def parse_answer(text: str | None) -> tuple[bool, Any]:
    """The JSON value of an answer, strictly: the whole text, else its one fenced block, else
    the last complete top-level object or array in the prose (never a span cut from the first
    ``{`` to the last ``}``, which joins quoted JSON and prose into something else)."""
    if text is None:
        return False, None
    body = text.strip()
    try:
        return True, json.loads(body)
    except ValueError:
        pass
    blocks = _FENCED_BLOCK.findall(body)
    if len(blocks) == 1:
        try:
            return True, json.loads(blocks[0].strip())
        except ValueError:
            return False, None  # the one block the model fenced is not JSON
    values = _top_level_values(body)
    return (True, values[-1]) if values else (False, None)


def _top_level_values(text: str) -> list[Any]:
    """Every complete JSON object or array in ``text`` that no other one contains, in order."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        found.append(value)
        index = end


def _schema_names(schema: Any, names: set[str]) -> set[str]:
    """Every property name the schema itself declares (anywhere in it)."""
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            names.update(str(name) for name in properties)
        for value in schema.values():
            _schema_names(value, names)
    elif isinstance(schema, list):
        for value in schema:
            _schema_names(value, names)
    return names


def _summary(error: jsonschema.ValidationError, known: set[str]) -> str:
    """The failing keyword and path; a key the schema does not declare (the answer's own) is
    shown as ``?``, so nothing the model wrote reaches the ledger."""
    path = "$" + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part if part in known else '?'}"
        for part in error.absolute_path
    )
    path = _SAFE_PATH.sub("?", path)[:120]
    return f"{error.validator} at {path}"


class StructuredTurn:
    """The schema of one turn and its attempts (owned by the :class:`~harness_core.turn.Turn`)."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        retries: int = DEFAULT_OUTPUT_RETRIES,
        native: bool = False,
    ) -> None:
        if not isinstance(retries, int) or not 0 <= retries <= MAX_OUTPUT_RETRIES:
            raise HarnessError("invalid-request", f"output retries must be 0-{MAX_OUTPUT_RETRIES}")
        self.validator = compile_schema(schema)
        self.schema: dict[str, Any] = dict(schema)
        self._names = _schema_names(self.schema, set())
        self.retries = retries
        self.native = native
        self.attempt = 1
        self.attempt_start = 0  # index into the turn's events where this attempt began
        self.last: Verdict | None = None

    # -- prompts ------------------------------------------------------------------------------

    def schema_text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), sort_keys=True)

    def first_prompt(self, prompt: str) -> str:
        """What the adapter is asked: the prompt, plus the schema unless the CLI takes it."""
        if self.native:
            return prompt
        return (
            f"{prompt}\n\nEnd your turn with a final answer that is only a JSON value (no prose, "
            f"no code fence) matching this JSON Schema:\n{self.schema_text()}"
        )

    def retry_prompt(self, verdict: Verdict) -> str:
        text = (
            "Your final answer did not match the required JSON Schema: "
            f"{verdict.detail[:600]}. Answer again with a final answer that matches it"
        )
        if self.native:
            return text + "."
        return text + f", as only a JSON value:\n{self.schema_text()}"

    # -- judging ------------------------------------------------------------------------------

    def check(self, completed: TurnCompleted, events: Sequence[Event]) -> Verdict:
        """Judge the attempt that ended with ``completed`` (``events``: this attempt's)."""
        if completed.output is not None:
            found, value = True, completed.output
        else:
            found, value = parse_answer(_answer_text(completed, events))
        if not found:
            verdict = Verdict(
                ok=False,
                detail="the answer is not JSON",
                summary="the answer is not JSON",
            )
        else:
            import jsonschema

            error = jsonschema.exceptions.best_match(self.validator.iter_errors(value))
            if error is None:
                verdict = Verdict(ok=True, value=value)
            else:
                verdict = Verdict(
                    ok=False, detail=error.message, summary=_summary(error, self._names)
                )
        self.last = verdict
        return verdict

    def validated(self, verdict: Verdict) -> OutputValidated:
        """The ``output.validated`` event of this attempt's verdict (its fixed summary only)."""
        if verdict.ok:
            return OutputValidated(attempt=self.attempt, verdict="passed")
        return OutputValidated(
            attempt=self.attempt, verdict="failed", reason=verdict.summary[:240] or None
        )

    def can_retry(self) -> bool:
        return self.attempt <= self.retries

    def retry_status(self) -> Status:
        """The status event a retry records (the summary only, never the answer)."""
        last = self.last.summary if self.last is not None else "no answer"
        return Status(
            message=f"the answer did not match the output schema ({last}); "
            f"retrying ({self.attempt} of {self.retries})"[:240]
        )

    # -- in the turn ----------------------------------------------------------------------------

    async def decide(self, turn: Any, terminal: Payload) -> Payload | None:
        """The terminal to record for an attempt that ended with ``terminal``, or ``None`` when a
        retry now runs in the same turn (the turn keeps stepping its new iterator). ``turn`` is
        the :class:`~harness_core.turn.Turn` (untyped here: that module imports this one)."""
        if not isinstance(terminal, TurnCompleted):
            return terminal  # failed or cancelled: as it is
        verdict = self.check(terminal, turn.events[self.attempt_start :])
        turn.record_runtime(self.validated(verdict))
        if verdict.ok:
            return self.accepted(terminal, verdict.value)
        if not self.can_retry():
            return self.failure()
        try:
            await self._retry(turn, self.retry_prompt(verdict))
        except Exception as error:
            reason = error.reason if isinstance(error, HarnessError) else "provider-failed"
            return TurnFailed(reason=reason, hint="the retry of a malformed answer did not start")
        return None

    async def _retry(self, turn: Any, prompt: str) -> None:
        """The next attempt, in the same turn (:meth:`~harness_core.turn.Turn.next_attempt`)."""
        started = await turn.next_attempt(prompt, self.retry_status(), output_schema=self.schema)
        self.attempt += 1
        self.attempt_start = started

    def accepted(self, completed: TurnCompleted, value: Any) -> TurnCompleted:
        return attrs.evolve(completed, output=value)

    def failure(self) -> TurnFailed:
        last = self.last.summary if self.last is not None else "no answer"
        return TurnFailed(
            reason="invalid-output", hint=f"{self.attempt} attempts; last: {last}"[:240]
        )


def _answer_text(completed: TurnCompleted, events: Sequence[Event]) -> str | None:
    if completed.text:
        return completed.text
    messages = [
        e.payload.text
        for e in events
        if isinstance(e.payload, MessageCompleted) and e.payload.role == "assistant"
    ]
    if messages:
        return messages[-1]
    deltas = "".join(e.payload.text for e in events if isinstance(e.payload, MessageDelta))
    return deltas or None
