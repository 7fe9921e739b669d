"""The ``store`` fixture: one fresh store of every kind (memory, JSONL, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_hookspecs import LedgerStore

from .ledger_samples import KINDS, open_store, url_for


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    opened = open_store(url_for(request.param, tmp_path, request))
    yield opened
    opened.close()
