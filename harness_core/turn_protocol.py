"""The former name of :mod:`harness_core.structured_output` (it holds only structured output),
kept so code importing it still works."""

from __future__ import annotations

from .structured_output import (  # noqa: F401
    MAX_OUTPUT_RETRIES,
    StructuredTurn,
    Verdict,
    compile_schema,
    parse_answer,
    structured_turn,
)
