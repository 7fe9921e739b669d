"""Field bounds shared by models and events, checked at construction - and by the runtime and
the conformance kit, which judge values against the same limits (``is_name``, ``has_control``,
``MAX_SAFE_INTEGER``...). (Was ``harness_hookspecs._bounds``, which still re-exports it.)"""

from __future__ import annotations

import re
import sys
from typing import Any

import attrs

# C0 controls, DEL and C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Text that may span lines (assistant text, prompts): tab/newline/CR allowed.
_CONTROL_EXCEPT_WS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# \Z, not $: "$" also matches before a final newline ("name\n" would pass is_name)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._:-]*\Z")

MAX_SAFE_INTEGER = 2**53 - 1
#: The largest ``cost_usd`` a usage report (or a sum of them) may hold: any finite number.
COST_USD_MAX = sys.float_info.max
STATUS_MAX = 240
PROVIDER_MAX = 64
SESSION_ID_MAX = 1024
TURN_ID_MAX = 128
TEXT_MAX = 1_048_576


def has_control(value: str, *, allow_whitespace: bool = False) -> bool:
    pattern = _CONTROL_EXCEPT_WS if allow_whitespace else _CONTROL
    return pattern.search(value) is not None


def printable_text(value: str | None) -> str | None:
    """An attrs converter for model-authored text (assistant messages, reasoning, a turn's
    answer): each control character a terminal would act on (all but tab, newline and CR)
    becomes U+FFFD. A model quoting a file with a form feed, or output with colour codes, is
    an answer to show, not a failed turn; a value that is not a str is left to the validator."""
    if type(value) is str and _CONTROL_EXCEPT_WS.search(value) is not None:
        return _CONTROL_EXCEPT_WS.sub("\ufffd", value)
    return value  # None, or (not a str) for the validator to refuse


def printable_bounded(low: int, high: int) -> Any:
    """An attrs validator for text :func:`printable_text` converted: a str of length low..high
    (its control characters are replaced already: no second search per streamed delta)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str):
            raise TypeError(f"{attribute.name} must be a string")
        if not low <= len(value) <= high:
            raise ValueError(f"{attribute.name} must be {low}-{high} characters")

    return check


def bounded(low: int, high: int, *, multiline: bool = False) -> Any:
    """An attrs validator: a str of length low..high without control characters."""
    # The pattern's search taken once: every model and event runs these checks.
    search = (_CONTROL_EXCEPT_WS if multiline else _CONTROL).search

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str):
            raise TypeError(f"{attribute.name} must be a string")
        if not low <= len(value) <= high:
            raise ValueError(f"{attribute.name} must be {low}-{high} characters")
        if search(value) is not None:
            raise ValueError(f"{attribute.name} must not contain control characters")

    return check


def optional_bounded(low: int, high: int, *, multiline: bool = False) -> Any:
    inner = bounded(low, high, multiline=multiline)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            inner(instance, attribute, value)

    return check


def name(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A plugin/harness name: 1-64 chars of lowercase letters, digits and . _ : -."""
    _name_bounds(instance, attribute, value)
    if not _NAME.match(value):
        raise ValueError(
            f"{attribute.name} must be lowercase letters, digits, '.', '_', ':' or '-'"
        )


_name_bounds = bounded(1, PROVIDER_MAX)


def is_name(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= PROVIDER_MAX and bool(_NAME.match(value))


def non_negative_int(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an integer")
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise ValueError(f"{attribute.name} must be a non-negative safe integer")


def non_negative_number(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{attribute.name} must be a number")
    if not 0 <= value <= COST_USD_MAX:
        raise ValueError(f"{attribute.name} must be non-negative and finite")


def json_value_size(value: Any) -> int:
    """The length of ``value`` as compact JSON; ``ValueError`` if it is not JSON."""
    import json

    try:
        return len(json.dumps(value, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError):
        raise ValueError("the value must be JSON (objects, arrays, strings, numbers)") from None


def json_value(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: ``None`` or a JSON value of at most TEXT_MAX characters encoded."""
    if value is not None and json_value_size(value) > TEXT_MAX:
        raise ValueError(f"{attribute.name} must be at most {TEXT_MAX} characters as JSON")


def json_object(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator: ``None`` or a JSON object (a mapping) of bounded size."""
    if value is None:
        return
    if not isinstance(value, dict) and not hasattr(value, "keys"):
        raise TypeError(f"{attribute.name} must be a JSON object")
    json_value(instance, attribute, dict(value))
