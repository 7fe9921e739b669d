"""The ``conformance_profile`` hook: a plugin tells the kit how to drive its harness offline."""

from __future__ import annotations

import contextlib
import os

import anyio
from harness_hookspecs import TurnCompleted, hookimpl
from harness_hookspecs.specs.conformance import ConformanceProfile

from harness_core import harness, plugins_from
from harness_core.conformance import CANARY_ENV_VAR, run_conformance

SEEN: list[tuple[str, object]] = []


@harness("profiled")
async def profiled(message, session):
    # Reads what the profile set up: a "server URL" in the host env and the session config.
    SEEN.append((message.content, os.environ.get("PROFILED_BASE_URL")))
    SEEN.append(("config", dict(session.config)))
    if message.content == "take your time":
        await anyio.sleep(30)
    yield "ok"
    yield TurnCompleted(text="ok")


class ProfilePlugin:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def conformance_profile(self, harness):
        if harness != "profiled":
            return None

        @contextlib.contextmanager
        def running():
            self.events.append("setup")
            try:
                yield ConformanceProfile(
                    prompt="say ok",
                    slow_prompt="take your time",
                    config={"base_url": "http://127.0.0.1:1"},
                    env={"PROFILED_BASE_URL": "http://127.0.0.1:1"},
                )
            finally:
                self.events.append("teardown")

        return running()


def test_profile_context_is_entered_and_used(workspace):
    SEEN.clear()
    plugin = ProfilePlugin()
    report = run_conformance("profiled", plugins=plugins_from([profiled, plugin]))
    assert report.passed, report.format_table()
    assert plugin.events == ["setup", "teardown"]
    assert ("say ok", "http://127.0.0.1:1") in SEEN
    assert ("take your time", "http://127.0.0.1:1") in SEEN  # the slow prompt was cancelled
    assert ("config", {"base_url": "http://127.0.0.1:1"}) in SEEN
    assert "slow prompt running" in report["cancel"].detail
    assert "PROFILED_BASE_URL" not in os.environ and CANARY_ENV_VAR not in os.environ


def test_an_explicit_profile_wins(workspace):
    SEEN.clear()
    plugin = ProfilePlugin()
    report = run_conformance(
        "profiled",
        plugins=plugins_from([profiled, plugin]),
        profile=ConformanceProfile(prompt="explicit"),
        workspace=workspace,
    )
    assert report.passed, report.format_table()
    assert plugin.events == []
    assert ("explicit", None) in SEEN
    assert "held by the kit" in report["cancel"].detail


def test_a_slow_prompt_that_is_not_slow_fails_cancel(workspace):
    report = run_conformance(
        profiled,
        profile=ConformanceProfile(prompt="say ok", slow_prompt="quick"),
        workspace=workspace,
    )
    assert report.failed == ["cancel"]
    assert "before it could be cancelled" in report["cancel"].detail


def test_the_plugins_object_is_left_as_it_was(workspace):
    plugins = plugins_from([profiled])
    before = (dict(plugins.credential_resolvers), set(plugins.info))
    run_conformance("profiled", plugins=plugins, workspace=workspace)
    assert (dict(plugins.credential_resolvers), set(plugins.info)) == before
    assert not plugins.is_registered("harness_core.conformance")
