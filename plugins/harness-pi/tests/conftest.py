"""The Pi harness as its tests drive it: the ``cli`` fixture (``workspace`` and
``make_controller`` come from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

from harness_cli_kit.testing import cli_fixture
from harness_pi import PiAdapter
from harness_pi.plugin import OFFLINE

SECRET = "sk-test-secret-1234"

cli = cli_fixture("pi", OFFLINE, PiAdapter, "OPENAI_API_KEY", SECRET)
