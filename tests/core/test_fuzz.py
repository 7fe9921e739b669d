"""Property tests (hypothesis): the stdio-jsonl stream parser and the ledger round trip.

- ``parse_line`` on any bytes returns a canonical payload, ``None``, or raises
  ``HarnessError("provider-failed")`` - never anything else;
- a stdio-jsonl program replaying random and mutated recorded streams through the real runtime
  ends every turn with exactly one terminal event, last, and leaves no process;
- any event the runtime can build round-trips through every store unchanged.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import TERMINAL_TYPES, Event, HarnessError, MessageDelta, Status, TurnFailed
from harness_hookspecs.events import PAYLOAD_TYPES
from harness_stdio_jsonl import plugin as stdio_plugin
from harness_stdio_jsonl.adapter import parse_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_core import Controller, plugins_from, proctree
from harness_core.ledger import open_ledger

RECORDED = [
    {"type": "status", "message": "thinking"},
    {"type": "message.delta", "text": "Hel"},
    {"type": "message.delta", "text": "lo"},
    {"type": "tool.started", "call_id": "c1", "name": "bash", "summary": "ls"},
    {"type": "tool.completed", "call_id": "c1", "name": "bash", "ok": True},
    {"type": "usage", "input_tokens": 3, "output_tokens": 2},
    {"type": "message.completed", "text": "Hello"},
    {"type": "turn.completed", "text": "Hello"},
]
KEYS = ["type", "text", "message", "reason", "call_id", "name", "ok", "input_tokens", "by"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
event_like = st.fixed_dictionaries(
    {"type": st.sampled_from([*sorted(r["type"] for r in RECORDED), "turn.failed", "x"])},
    optional={k: json_values for k in KEYS[1:]},
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=200), event_like.map(lambda d: json.dumps(d).encode())))
def test_parse_line_never_raises_anything_but_provider_failed(line: bytes) -> None:
    try:
        payload = parse_line(line)
    except HarnessError as error:
        assert error.reason == "provider-failed"
        return
    assert payload is None or type(payload) in set(PAYLOAD_TYPES.values())


def mutated_streams() -> st.SearchStrategy[list[str]]:
    recorded = [json.dumps(r) for r in RECORDED]
    garbage = st.sampled_from(["", "{", "null", "[]", '{"type": 3}', "\x00\xff", '"x"'])
    line = st.one_of(
        st.sampled_from(recorded), event_like.map(json.dumps), garbage, st.text(max_size=30)
    )
    drop_terminal = st.lists(st.sampled_from(recorded[:-1]), max_size=8)
    return st.one_of(
        st.lists(line, max_size=12),
        drop_terminal,
        st.permutations(recorded),
        st.lists(st.sampled_from(recorded), max_size=12),
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(stream=mutated_streams())
def test_any_stream_ends_with_exactly_one_terminal_and_no_process(stream: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "stream.txt"
        replay.write_text("".join(s.replace("\n", " ") + "\n" for s in stream), errors="replace")
        program = [sys.executable, "-I", "-c", f"import sys; sys.stdin.readline(); "
                   f"sys.stdout.write(open({str(replay)!r}, errors='replace').read())"]  # fmt: skip

        async def main() -> list[Event]:
            async with Controller(
                plugins=plugins_from([stdio_plugin]),
                ledger="memory:",
                state_dir=Path(tmp) / "state",
            ) as c:
                ref = await c.open_session(
                    harness="stdio-jsonl", workspace=tmp, config={"command": program}
                )
                result = await c.run_turn(ref, "go", timeout=20)
                return list(result.events)

        events = anyio.run(main)
    terminals = [e for e in events if e.type in TERMINAL_TYPES]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    assert [e.sequence for e in events] == list(range(events[0].sequence, events[-1].sequence + 1))
    leftover = [
        p.pid
        for p in proctree.snapshot().values()
        if (proctree.owner_tag(p.pid) or "").startswith(proctree.owner() + "/")
    ]
    assert leftover == []


def _valid(cls: type, **fields: object) -> object:
    """The payload, or None when its validators refuse the generated text (the boundary)."""
    try:
        return cls(**fields)
    except (TypeError, ValueError):
        return None


texts = st.text(max_size=300)  # hypothesis leaves out lone surrogates by default
payloads = st.one_of(
    texts.map(lambda t: _valid(MessageDelta, text=t)),
    texts.map(lambda t: _valid(Status, message=t)),
    st.sampled_from(["timeout", "provider-failed", "limit-exceeded"]).map(
        lambda r: TurnFailed(reason=r)
    ),
).filter(lambda p: p is not None)


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(payloads, min_size=1, max_size=20))
def test_ledger_round_trip(
    kind: str, batch: list, tmp_path_factory: pytest.TempPathFactory
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ledger"))
    from ledger_samples import make_event, make_record

    where = tmp_path_factory.mktemp(kind)
    url = {"memory": "memory:", "jsonl": f"jsonl://{where}/l", "sqlite": f"sqlite:///{where}/l.db"}
    store = open_ledger(url[kind])
    try:
        store.create_session(make_record())
        events = [make_event(i, p) for i, p in enumerate(batch, start=1)]
        store.append(tuple(events))
        store.flush()
        assert store.events("sess-1") == events
    finally:
        store.close()
    if kind != "memory":
        reopened = open_ledger(url[kind])
        try:
            assert reopened.events("sess-1") == events
        finally:
            reopened.close()
