"""Property tests (hypothesis) for every bundled CLI adapter's stream parser.

Each parser (a :class:`harness_cli_kit.stream.JsonLinesStream` subclass) is fed random streams
built from its own vocabulary: the string literals of its module (the native event types and
field names it looks for), as keys and values of JSON objects, mixed with garbage lines. On any
such stream a parser returns contract payloads only, ends with exactly one terminal payload, and
never lets a native error message through into a failure's hint.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from pathlib import Path

import pytest
from harness_cli_kit.stream import JsonLinesStream
from harness_hookspecs import TERMINAL_TYPES, TurnFailed
from harness_hookspecs.events import PAYLOAD_TYPES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STREAM_MODULES = [
    "harness_claude_code.stream",
    "harness_codex.stream",
    "harness_pi.stream",
]
CANARY = "RAW-PROVIDER-TEXT-7f3a"


def _parsers() -> list[type[JsonLinesStream]]:
    found = []
    for name in STREAM_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, JsonLinesStream)
            and value is not JsonLinesStream
            and value.__module__ == name
        ]
    return found


def _vocabulary(parser: type[JsonLinesStream]) -> list[str]:
    """The string literals of the parser's module, bounded: what its code compares against."""
    source = Path(inspect.getfile(parser)).read_text()
    words = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 40
    }
    return sorted(words - {""})


PARSERS = _parsers()


def _streams(words: list[str]) -> st.SearchStrategy[list[bytes]]:
    word = st.sampled_from(words)
    scalar = (
        st.none()
        | st.booleans()
        | st.integers(-3, 10**6)
        | st.floats(allow_nan=False, allow_infinity=False)
        | word
        | st.just(CANARY)
    )
    value = st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(word, inner, max_size=4),
        max_leaves=10,
    )
    objects = st.fixed_dictionaries({"type": word}, optional={w: value for w in words[:40]})
    loose = st.dictionaries(word, value, max_size=6)
    # JSON-RPC lines (codex app-server, pi rpc): notifications, requests and responses
    rpc = st.one_of(
        st.fixed_dictionaries({"method": word, "params": st.dictionaries(word, value, max_size=5)}),
        st.fixed_dictionaries(
            {"id": st.integers(0, 5), "method": word, "params": st.dictionaries(word, value)}
        ),
        st.fixed_dictionaries({"id": st.integers(0, 5), "result": value}),
        st.fixed_dictionaries({"id": st.integers(0, 5), "error": value}),
    )
    line = st.one_of(
        objects.map(lambda d: json.dumps(d).encode()),
        loose.map(lambda d: json.dumps(d).encode()),
        rpc.map(lambda d: json.dumps(d).encode()),
        st.binary(max_size=30),
        st.just(b""),
        st.just(b"[1, 2]"),
    )
    return st.lists(line, max_size=25)


def _check_turn(payloads: list) -> None:
    """Contract payloads only, exactly one terminal and last, no native text in a failure."""
    assert payloads, "a stream always ends the turn"
    assert all(isinstance(p, tuple(PAYLOAD_TYPES.values())) for p in payloads), payloads
    terminals = [p for p in payloads if type(p).TYPE in TERMINAL_TYPES]
    assert len(terminals) == 1 and terminals[0] is payloads[-1], payloads
    for failure in (p for p in payloads if isinstance(p, TurnFailed)):
        assert CANARY not in (failure.hint or "") + failure.message


@pytest.mark.skipif(not PARSERS, reason="no CLI adapter plugin is installed")
@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.__name__)
def test_any_stream_gives_contract_payloads_and_one_terminal_last(parser):
    try:
        parser()
    except TypeError:
        pytest.skip(f"{parser.__name__} needs constructor arguments")

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_streams(_vocabulary(parser)), exit_code=st.sampled_from([0, 1, 2, 137]))
    def check(lines, exit_code):
        _check_turn(parser.parse(lines, exit_code))

    check()


def test_every_bundled_parser_is_fuzzed():
    names = {parser.__module__.split(".")[0] for parser in PARSERS}
    installed = set()
    for name in STREAM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        installed.add(name.split(".")[0])
    assert names == installed  # every installed adapter's stream module has a parser here


def test_any_opencode_serve_event_stream_and_reply_give_one_terminal_last():
    """OpenCode's adapter maps ``opencode serve`` events (SSE) and the message reply, not lines."""
    events_module = pytest.importorskip("harness_opencode.events")
    words = _vocabulary(events_module.ServeEvents)
    word = st.sampled_from(words)
    scalar = st.none() | st.booleans() | st.integers(-3, 10**6) | word | st.just(CANARY)
    value = st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(word, inner, max_size=4),
        max_leaves=10,
    )
    props = st.dictionaries(word, value, max_size=5).map(lambda d: {**d, "sessionID": "ses_f"})
    event = st.fixed_dictionaries({"type": word, "properties": props})

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events=st.lists(event, max_size=20), reply=st.dictionaries(word, value, max_size=4))
    def check(events, reply):
        _check_turn(events_module.parse_events(events, reply, "ses_f"))

    check()
