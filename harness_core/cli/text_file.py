"""``harness run --instructions FILE``: the host's instructions for a new session.

Read and checked before anything opens, so a bad file records nothing: one line
``harness: error: invalid-request: <what is wrong>: <detail>``.
"""

from __future__ import annotations

from pathlib import Path

from harness_hookspecs import safe_line
from harness_hookspecs.bounds import has_control
from harness_hookspecs.models import INSTRUCTIONS_MAX

from .errors import CliError


def _refuse(what: str, detail: str) -> CliError:
    return CliError("invalid-request", f"{what}: {safe_line(detail, 300)}")


def read_instructions(path: str) -> str:
    """The text of ``path``: UTF-8, 1-``INSTRUCTIONS_MAX`` characters, no control characters
    but tabs and line breaks."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise _refuse("cannot read the instructions file", f"{path}: {error.strerror}") from None
    if len(data) > 4 * INSTRUCTIONS_MAX:  # more bytes than any text within the bound
        raise _refuse("the instructions file is too large", f"{len(data):,} bytes")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise _refuse("the instructions file is not text", f"{path}: not UTF-8") from None
    if not text:
        raise _refuse("the instructions file is empty", path)
    if len(text) > INSTRUCTIONS_MAX:
        detail = f"{len(text):,} characters (max {INSTRUCTIONS_MAX:,})"
        raise _refuse("the instructions are too long", detail)
    if has_control(text, allow_whitespace=True):
        raise _refuse("the instructions file is not text", f"{path}: control characters")
    return text
