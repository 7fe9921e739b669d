"""``conformance_profile``: drive the real CLI offline against harness_core's fake model server.

Needs ``harness-core[testing]`` (imported lazily, only when the conformance kit asks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from harness_hookspecs.specs.conformance import ConformanceProfile

from . import _cli
from .adapter import BINARY

SLOW = "Take your time with the slow task"


@contextmanager
def profile() -> Iterator[ConformanceProfile]:
    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    config: dict[str, object] = {"api_key": "sk-conformance"}
    path = _cli.find_cli({}, BINARY)
    if path is not None:
        config["cli_path"] = path
    script = [
        Step(text="still working", delay=30, times=None, match=Match(contains=SLOW, tools=None))
    ]
    with FakeModelServer(script, default_text="ok") as server:
        config["base_url"] = server.openai_base_url
        yield ConformanceProfile(
            slow_prompt=SLOW,
            model="gpt-5",
            config=config,
            turn_timeout=60,
            cancel_after=1.0,
        )
