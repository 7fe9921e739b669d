"""Event timestamps read back as seconds since the epoch."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness_core.clock import epoch_seconds, now


def test_epoch_seconds_reads_what_now_writes():
    before = datetime.now(UTC).timestamp()
    stamp = now()
    after = datetime.now(UTC).timestamp()
    seconds = epoch_seconds(stamp)
    assert seconds is not None and before - 1e-6 <= seconds <= after + 1e-6


def test_epoch_seconds_reads_any_zone():
    assert epoch_seconds("2026-12-05T03:37:00+01:00") == epoch_seconds("2026-12-05T02:37:00Z")
    assert epoch_seconds("1970-01-01T00:00:01.500000Z") == 1.5


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-40T00:00:00Z"])
def test_epoch_seconds_is_none_for_what_is_not_a_timestamp(text):
    assert epoch_seconds(text) is None
