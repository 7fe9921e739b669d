"""Fork and conversation rewind on real Claude Code (``--resume --fork-session --session-id
--resume-session-at``) against the fake model: what the next model
request holds of the conversation (:class:`~harness_cli_kit.testing.CliBranchScenarios`)."""

from __future__ import annotations

from harness_cli_kit.testing import CliBranchScenarios


class TestForkRewind(CliBranchScenarios):
    pass
