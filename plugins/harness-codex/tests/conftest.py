"""The Codex harness as its tests drive it: the ``cli`` fixture (``workspace`` and
``make_controller`` come from harness_cli_kit's pytest plugin)."""

from __future__ import annotations

from harness_cli_kit.testing import cli_fixture
from harness_codex import CodexAdapter
from harness_codex.plugin import OFFLINE

SECRET = "sk-test-secret-5678"

cli = cli_fixture("codex", OFFLINE, CodexAdapter, "OPENAI_API_KEY", SECRET)
