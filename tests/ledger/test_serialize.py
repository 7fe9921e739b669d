"""The one converter: every payload type round-trips; extras are projected out; bad data fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness_hookspecs import HarnessDescriptor, HarnessError
from harness_hookspecs.events import MessageDelta, TurnFailed

from harness_core import serialize

from ..helpers import ROOT
from .ledger_samples import SAMPLES, make_event, make_record


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.TYPE)
def test_every_payload_round_trips_through_dict_and_json(sample: Any) -> None:
    event = make_event(3, sample)
    data = serialize.event_to_dict(event)
    assert serialize.event_from_dict(data) == event
    text = serialize.dumps_event(event)
    assert "\n" not in text
    assert json.loads(text) == data  # the generated encoder says what the converter says
    assert serialize.loads_event(text) == event
    assert json.loads(serialize.payload_json(sample)) == serialize.payload_to_dict(sample)
    assert text.isascii()


def test_dumps_event_keeps_the_dict_key_order() -> None:
    event = make_event(1, turn_id=None)
    assert list(json.loads(serialize.dumps_event(event))) == list(serialize.event_to_dict(event))


def test_unknown_fields_are_projected_out() -> None:
    data = serialize.event_to_dict(make_event(1, MessageDelta(text="hi")))
    data["provider_secret_field"] = "x"
    data["payload"]["raw_provider_blob"] = {"nested": [1, 2]}
    event = serialize.event_from_dict(data)
    assert event == make_event(1, MessageDelta(text="hi"))
    assert "raw_provider_blob" not in serialize.event_to_dict(event)["payload"]


def test_unknown_type_and_bad_payloads_are_ledger_failed() -> None:
    good = serialize.event_to_dict(make_event(1))
    for broken in (
        {**good, "type": "made.up"},
        {**good, "payload": {}},  # MessageDelta needs text
        {**good, "payload": {"text": ""}},  # validators re-run: empty delta refused
        {**good, "payload": ["x"]},
        {k: v for k, v in good.items() if k != "sequence"},
    ):
        with pytest.raises(HarnessError) as caught:
            serialize.event_from_dict(broken)
        assert caught.value.reason == "ledger-failed"
    for text in ("{not json", "[1, 2]"):
        with pytest.raises(HarnessError) as caught:
            serialize.loads_event(text)
        assert caught.value.reason == "ledger-failed"


def test_failed_message_is_fixed_by_reason_on_load() -> None:
    data = serialize.event_to_dict(make_event(1, TurnFailed(reason="timeout")))
    data["payload"]["message"] = "raw provider text"
    loaded = serialize.event_from_dict(data)
    assert isinstance(loaded.payload, TurnFailed)
    assert loaded.payload.message == TurnFailed(reason="timeout").message


def test_lone_surrogates_encode() -> None:
    event = make_event(1, MessageDelta(text="a\ud800b"))
    assert serialize.loads_event(serialize.dumps_event(event)) == event


def test_session_record_round_trip_and_projection() -> None:
    record = make_record()
    data = serialize.record_to_dict(record)
    assert data["ref"] == {"provider": "echo", "target": "local", "session_id": "sess-1"}
    assert serialize.record_from_dict({**data, "extra": 1}) == record
    assert serialize.loads_record(serialize.dumps_record(record)) == record
    with pytest.raises(HarnessError) as caught:
        serialize.record_from_dict({**data, "status": "weird"})
    assert caught.value.reason == "ledger-failed"


def test_descriptor_to_dict_is_json_able() -> None:
    descriptor = HarnessDescriptor(
        provider="echo", targets=["local"], features=["resume", "cancel"], details={"cli": "1.0"}
    )
    data = serialize.descriptor_to_dict(descriptor)
    assert data["features"] == ["cancel", "resume"]
    assert data["details"] == {"cli": "1.0"}
    json.dumps(data)


def test_samples_cover_the_closed_union() -> None:
    from harness_hookspecs import PAYLOAD_TYPES

    assert sorted(s.TYPE for s in SAMPLES) == sorted(PAYLOAD_TYPES)


_ODD_VALUES = [
    "x", "", "a\x00b", 5, 0, -1, None, True, False, 1.5, float("inf"), [1], {"a": 1}, "7",
    "true", "local", "assistant", "deny", "timeout", "host", 10**20,
]  # fmt: skip


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.TYPE)
def test_generated_structure_reads_what_the_converter_reads(sample: Any) -> None:
    """The structure functions generated for simple payload classes (no cattrs on the read
    path) accept, convert and refuse exactly what the converter's hooks do."""
    import random

    import attrs
    import cattrs

    cls = type(sample)
    generated = serialize._make_structure(cls)
    if generated is None:  # read by the converter: a field of another type (usage: Usage)
        assert any(a.type not in serialize._STRUCTURE_EXPRS for a in attrs.fields(cls))
        return
    hook = serialize.converter.get_structure_hook(cls)
    names = [a.name for a in attrs.fields(cls)] + ["unknown"]
    rnd = random.Random(cls.TYPE)
    cases: list[Any] = [{}, [], "text", 5, None, serialize.payload_to_dict(sample)]
    cases += [{k: rnd.choice(_ODD_VALUES) for k in names if rnd.random() < 0.8} for _ in range(400)]
    errors = (KeyError, TypeError, ValueError, cattrs.BaseValidationError)
    for data in cases:
        outcomes = []
        for structure in (hook, generated):
            try:
                outcomes.append(structure(data, cls))
            except errors:
                outcomes.append("refused")
        assert outcomes[0] == outcomes[1], data


def test_writing_and_reading_simple_events_and_records_needs_no_cattrs() -> None:
    """cattrs (~10 ms to import) is loaded only for what the generated functions don't cover."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from harness_core import serialize\n"
        "from harness_hookspecs.events import MessageDelta, TurnCompleted\n"
        "from tests.ledger.ledger_samples import make_event, make_record\n"
        "for payload in (MessageDelta(text='hi'), TurnCompleted(text='hi')):\n"
        "    event = make_event(1, payload)\n"
        "    assert serialize.loads_event(serialize.dumps_event(event)) == event\n"
        "serialize.dumps_record(make_record())\n"
        "print('cattrs' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "False"
