"""``conformance_profile``: drive the real CLI offline against harness_core's fake model server.

Needs ``harness-core[testing]`` (imported lazily, only when the conformance kit asks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from harness_hookspecs.specs.conformance import ConformanceProfile

SLOW = "Take your time with the slow task"


def find_binary(name: str) -> str:
    from harness_core.testing.clis import find_cli

    return find_cli(name)


@contextmanager
def fake_server(openai: bool = True) -> Iterator[tuple[str, object]]:
    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    script = [
        Step(text="still working", delay=30, times=None, match=Match(contains=SLOW, tools=None))
    ]
    with FakeModelServer(script, default_text="ok") as server:
        yield (server.openai_base_url if openai else server.base_url), server


@contextmanager
def profile() -> Iterator[ConformanceProfile]:
    with fake_server() as (url, _):
        yield ConformanceProfile(
            slow_prompt=SLOW,
            model="fake-model",
            config={"command": [find_binary("pi")], "base_url": url, "api_key": "sk-conf"},
            turn_timeout=60,
            cancel_after=1.0,
        )
