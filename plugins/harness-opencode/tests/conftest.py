"""The OpenCode harness as its tests drive it: the ``cli`` fixture (``workspace`` and
``make_controller`` come from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

from harness_cli_kit.testing import cli_fixture
from harness_opencode import OpenCodeAdapter
from harness_opencode.plugin import OFFLINE

SECRET = "sk-test-secret-1234"

cli = cli_fixture("opencode", OFFLINE, OpenCodeAdapter, "OPENAI_API_KEY", SECRET)
