"""harness_hookspecs.bounds rule by rule: every limit at its edge, every character class by name
(mutation testing, tools/mutation.py bounds, runs this file: mutmut does not mutate the module's
patterns and constants, so each is pinned here)."""

from __future__ import annotations

import json
import types

import pytest
from harness_hookspecs import Usage
from harness_hookspecs import bounds as b

FIELD = types.SimpleNamespace(name="field")


def check(validator, value):
    """The validator's complaint about ``value`` as (exception type, message), or None."""
    try:
        validator(None, FIELD, value)
    except (TypeError, ValueError) as error:
        return type(error), str(error)
    return None


C0 = [chr(c) for c in range(0x00, 0x20)]
C1 = [chr(c) for c in range(0x80, 0xA0)]


def _plain_id(value: str) -> str:
    """A test id pytest keeps as it is: mutmut selects a mutant's tests by id, and cannot select
    an id pytest escaped (a control or non-ASCII character, a backslash)."""
    return "".join(c if " " <= c <= "~" and c != "\\" else f"U+{ord(c):04X}" for c in value)


@pytest.mark.parametrize("char", [*C0, "\x7f", *C1], ids=lambda c: f"U+{ord(c):04X}")
def test_every_c0_c1_and_del_character_is_a_control(char):
    assert b.has_control(f"a{char}b")


@pytest.mark.parametrize("char", ["\t", "\n", "\r"], ids=["tab", "newline", "cr"])
def test_tab_newline_and_cr_are_allowed_only_where_text_may_span_lines(char):
    assert b.has_control(f"a{char}b")
    assert not b.has_control(f"a{char}b", allow_whitespace=True)


@pytest.mark.parametrize(
    "char",
    [c for c in C0 if c not in "\t\n\r"] + ["\x7f", *C1],
    ids=lambda c: f"U+{ord(c):04X}",
)
def test_other_controls_stay_controls_in_multiline_text(char):
    # \x0b (vertical tab) and \x0c (form feed) among them: whitespace, but not text's
    assert b.has_control(f"a{char}b", allow_whitespace=True)


@pytest.mark.parametrize(
    "text", ["plain", "\xa0non-breaking", "é ü 漢字 🙂", " ~ ", ""], ids=_plain_id
)
def test_printable_text_is_not_a_control(text):
    assert not b.has_control(text)
    assert not b.has_control(text, allow_whitespace=True)


def test_bounded_checks_type_length_and_controls():
    validator = b.bounded(2, 5)
    assert check(validator, "ab") is None and check(validator, "abcde") is None
    assert check(validator, "a") == (ValueError, "field must be 2-5 characters")
    assert check(validator, "abcdef") == (ValueError, "field must be 2-5 characters")
    assert check(validator, 12) == (TypeError, "field must be a string")
    assert check(validator, None) == (TypeError, "field must be a string")
    assert check(validator, "a\nb") == (ValueError, "field must not contain control characters")
    multiline = b.bounded(1, 10, multiline=True)
    assert check(multiline, "a\nb\tc\r") is None
    assert check(multiline, "a\x0bb") == (ValueError, "field must not contain control characters")
    assert check(multiline, "a\x0cb") == (ValueError, "field must not contain control characters")


def test_optional_bounded_allows_none_and_checks_the_rest():
    validator = b.optional_bounded(1, 3)
    assert check(validator, None) is None and check(validator, "abc") is None
    assert check(validator, "") == (ValueError, "field must be 1-3 characters")
    assert check(validator, "abcd") == (ValueError, "field must be 1-3 characters")
    assert check(validator, "a\x00") == (ValueError, "field must not contain control characters")
    assert check(validator, "a\n") == (ValueError, "field must not contain control characters")
    multiline = b.optional_bounded(1, 10, multiline=True)
    assert check(multiline, None) is None and check(multiline, "a\nb\tc") is None
    assert check(multiline, "a\x0bb") == (ValueError, "field must not contain control characters")


NAME_RULE = "field must be lowercase letters, digits, '.', '_', ':' or '-'"


@pytest.mark.parametrize("value", ["a", "0", "claude-code", "acp:codex", "a.b_c:d-e", "x" * 64])
def test_names_that_are_names(value):
    assert check(b.name, value) is None
    assert b.is_name(value)


@pytest.mark.parametrize(
    "value",
    [
        "Claude",  # uppercase
        "claudE",
        "-lead",  # the first character is a letter or a digit
        ".hidden",
        "_x",
        ":x",
        "ends/with/slash",  # the whole name, not a prefix of it
        "has space",
        "tab\tin",
        "trailing\n",
        "ümlaut",
    ],
    ids=_plain_id,
)
def test_names_that_are_not(value):
    assert check(b.name, value) is not None
    assert not b.is_name(value)


def test_a_names_length_and_type():
    assert check(b.name, "") == (ValueError, "field must be 1-64 characters")
    assert check(b.name, "x" * 65) == (ValueError, "field must be 1-64 characters")
    assert check(b.name, "Abc") == (ValueError, NAME_RULE)
    assert check(b.name, 7) == (TypeError, "field must be a string")
    assert not b.is_name("x" * 65) and not b.is_name("") and not b.is_name(7)
    assert not b.is_name(None)


def test_non_negative_int_is_a_safe_integer_from_zero():
    assert check(b.non_negative_int, None) is None
    assert check(b.non_negative_int, 0) is None
    assert check(b.non_negative_int, b.MAX_SAFE_INTEGER) is None
    assert b.MAX_SAFE_INTEGER == 9007199254740991
    too_big = (ValueError, "field must be a non-negative safe integer")
    assert check(b.non_negative_int, b.MAX_SAFE_INTEGER + 1) == too_big
    assert check(b.non_negative_int, -1) == too_big
    for not_int in (True, False, 1.0, "1"):
        assert check(b.non_negative_int, not_int) == (TypeError, "field must be an integer")


def test_non_negative_number_is_any_finite_number_from_zero():
    for ok in (None, 0, 0.0, 1, 2.5, b.COST_USD_MAX, b.MAX_SAFE_INTEGER + 1):
        assert check(b.non_negative_number, ok) is None, ok
    finite = (ValueError, "field must be non-negative and finite")
    for bad in (-0.01, -1, float("inf"), float("-inf"), float("nan")):
        assert check(b.non_negative_number, bad) == finite, bad
    for not_number in (True, "1", [1]):
        assert check(b.non_negative_number, not_number) == (TypeError, "field must be a number")


def test_usage_cost_is_a_non_negative_finite_number():
    assert Usage(cost_usd=0.25).cost_usd == 0.25
    assert Usage(cost_usd=0).cost_usd == 0
    for bad in (-0.25, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="cost_usd must be non-negative and finite"):
            Usage(cost_usd=bad)


def test_json_value_size_is_the_compact_encoding():
    assert b.json_value_size({"a": [1, 2], "b": "x"}) == len('{"a":[1,2],"b":"x"}')
    for not_json in ({1, 2}, object(), float("nan"), {"x": float("inf")}):
        with pytest.raises(ValueError) as refused:
            b.json_value_size(not_json)
        assert str(refused.value) == "the value must be JSON (objects, arrays, strings, numbers)"


def test_json_values_up_to_text_max_characters():
    assert b.TEXT_MAX == 1_048_576
    at_max = "x" * (b.TEXT_MAX - 2)  # with its two quotes: exactly TEXT_MAX
    assert len(json.dumps(at_max)) == b.TEXT_MAX
    assert check(b.json_value, at_max) is None
    assert check(b.json_value, None) is None
    too_big = (ValueError, f"field must be at most {b.TEXT_MAX} characters as JSON")
    assert check(b.json_value, at_max + "x") == too_big


def test_json_objects_are_mappings_of_bounded_size():
    assert check(b.json_object, None) is None
    assert check(b.json_object, {"a": 1}) is None
    for not_object in ([1, 2], "text", 3):
        assert check(b.json_object, not_object) == (TypeError, "field must be a JSON object")

    class Mapping:  # anything with keys() that dict() accepts
        def keys(self):
            return ["a"]

        def __getitem__(self, key):
            return 1

    assert check(b.json_object, Mapping()) is None
    too_big = (ValueError, f"field must be at most {b.TEXT_MAX} characters as JSON")
    assert check(b.json_object, {"a": "x" * b.TEXT_MAX}) == too_big


def test_the_contracts_other_limits():
    assert (b.STATUS_MAX, b.PROVIDER_MAX, b.SESSION_ID_MAX, b.TURN_ID_MAX) == (240, 64, 1024, 128)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: __import__("harness_hookspecs").MessageDelta(text=t).text,
        lambda t: __import__("harness_hookspecs").MessageCompleted(text=t).text,
        lambda t: __import__("harness_hookspecs").TurnCompleted(text=t).text,
        lambda t: __import__("harness_hookspecs").ThinkingDelta(text=t).text,
        lambda t: __import__("harness_hookspecs").ThinkingCompleted(text=t).text,
    ],
)
def test_model_text_shows_control_characters_as_replacement_characters(make):
    # A model quoting a file with a form feed, or coloured output, is an answer, not a fault.
    assert make("page\x0cnext \x1b[1mbold\x00\x9b.\tok\r\n") == (
        "page\ufffdnext \ufffd[1mbold\ufffd\ufffd.\tok\r\n"
    )
    assert make("plain text") == "plain text"


def test_summaries_and_prompts_still_refuse_control_characters():
    from harness_hookspecs import Status, TurnStarted

    with pytest.raises(ValueError, match="control characters"):
        Status(message="a\x1bb")
    with pytest.raises(ValueError, match="control characters"):
        TurnStarted(prompt="a\x1bb")
    assert b.printable_text(3) == 3  # left for the validator, which refuses it
    with pytest.raises(TypeError):
        __import__("harness_hookspecs").MessageDelta(text=3)


def test_printable_bounded_checks_type_and_length_only():
    validator = b.printable_bounded(1, 5)
    assert check(validator, "a") is None and check(validator, "abcde") is None
    # the converter before it replaced controls already: not searched again
    assert check(validator, "a\x1bb") is None
    assert check(validator, "") == (ValueError, "field must be 1-5 characters")
    assert check(validator, "abcdef") == (ValueError, "field must be 1-5 characters")
    assert check(validator, 3) == (TypeError, "field must be a string")
    from harness_hookspecs import MessageCompleted, MessageDelta

    with pytest.raises(ValueError):
        MessageDelta(text="")
    with pytest.raises(ValueError):
        MessageCompleted(text="x" * (b.TEXT_MAX + 1))
    assert MessageCompleted(text="").text == ""
