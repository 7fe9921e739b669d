"""The one converter: every payload type round-trips; extras are projected out; bad data fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness_hookspecs import HarnessDescriptor, HarnessError
from harness_hookspecs.events import MessageDelta, TurnFailed

from harness_core import serialize

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
