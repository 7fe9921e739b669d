"""Structured turn output by prompt-and-validate (no native mechanism in this CLI's run mode):
the shared scenarios against the real CLI and the fake model."""

from __future__ import annotations

from harness_cli_kit.structured_testing import PromptedStructuredScenarios


class TestStructured(PromptedStructuredScenarios):
    pass
