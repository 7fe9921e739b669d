"""``conformance_profile``: drive the real CLI offline against harness_core's fake model server.

Needs ``harness-core[testing]`` (imported lazily, only when the conformance kit asks).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness_hookspecs import HarnessError
from harness_hookspecs.specs.conformance import ConformanceProfile

SLOW = "Take your time with the slow task"


def find_binary(name: str) -> str:
    """The pinned CLI in the project's ``tools/npm`` when present, else ``PATH``."""
    try:
        import harness_core

        candidate = (
            Path(harness_core.__file__).resolve().parents[1] / "tools/npm/node_modules/.bin" / name
        )
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which(name)
    if found is None:
        raise HarnessError("provider-unavailable", f"{name} is not installed")
    return found


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
            config={"command": [find_binary("opencode")], "base_url": url, "api_key": "sk-conf"},
            turn_timeout=60,
            cancel_after=1.0,
        )
