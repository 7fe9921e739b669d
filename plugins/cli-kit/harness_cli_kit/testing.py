"""Scenario helpers shared by the CLI adapters' test suites (they need ``harnessplane[testing]``
and pytest; imported by tests only).

A suite describes its harness once (:class:`CliUnderTest`) and runs the common scenarios with
it: a turn with a tool call that writes a file then a resume in a new controller, a cancel
that must leave no process, and the failure matrix (HTTP errors, unreachable endpoint, garbage
or truncated output, a missing binary). Each test keeps only the assertions that are its
CLI's own.
"""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness_hookspecs import Credential, hookimpl

from .conformance import OfflineProfile
from .locate import CLI_PATH_ENV, find_cli

#: The reply of the tool scenario's second step (the first turn's final text).
CREATED = "Created out.txt."
SECOND = "Second turn reply."


class StaticCredentials:
    """A credentials plugin that injects one key as ``env_var``."""

    def __init__(self, env_var: str, value: str) -> None:
        self.env_var = env_var
        self.value = value

    @hookimpl
    def credentials_resolve(self, request: Any) -> Any:
        async def resolve() -> list[Credential]:
            return [Credential(env_var=self.env_var, value=self.value, source="test")]

        return resolve()


def installed_cli(name: str) -> str:
    """The pinned (or installed) CLI ``name``, or skip the test saying how to install it."""
    path = find_cli({}, name)
    if path is None:
        pytest.skip(f"{name} is not installed (PATH or {CLI_PATH_ENV}; run .ci/install-clis.sh)")
    return path


def unreachable_url(suffix: str = "") -> str:
    """An http URL on a local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{suffix}"


def fake_cli(tmp_path: Path, name: str, version_line: str, body: str) -> str:
    """An executable stand-in for a CLI: prints ``version_line`` for ``--version``, else runs
    ``body`` (Python)."""
    path = tmp_path / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if '--version' in sys.argv:\n"
        f"    print({version_line!r}); sys.exit(0)\n" + textwrap.dedent(body)
    )
    path.chmod(0o755)
    return str(path)


def tool_script(tool_call: Any) -> list[Any]:
    """The fake model's script: a tool call that writes ``out.txt``, the answer after its
    result, and the reply to a second turn saying "again"."""
    from harness_core.testing.fake_model import Match, Step, Usage

    return [
        Step(text="Creating it.", tool_calls=[tool_call], usage=Usage(100, 20)),
        Step(text=CREATED, match=Match(tool_result=True), usage=Usage(150, 10)),
        Step(text=SECOND, match=Match(contains="again")),
    ]


def error_step(status: int, message: str = "secret upstream text") -> Any:
    """A fake-model step that answers every request with an HTTP error."""
    from harness_core.testing.fake_model import ErrorReply, Match, Step

    return Step(error=ErrorReply(status, message), times=None, match=Match(tools=None))


def dropped_step() -> Any:
    """A fake-model step whose stream is cut mid-answer."""
    from harness_core.testing.fake_model import Match, Step

    return Step(text="Hello there, this is cut", drop=True, times=None, match=Match(tools=None))


def assert_no_process(leader: int) -> None:
    from harness_core.testing.processes import alive, wait_gone

    assert wait_gone(leader) == [] and not alive(leader)


def assert_tool_turn(result: Any, workspace: str, *, usage: bool = True) -> list[str]:
    """The common shape of the tool scenario's first turn; returns its event types."""
    assert result.status == "completed", result
    assert result.text == CREATED
    assert (Path(workspace) / "out.txt").read_text() == "hello\n"
    types = [e.type for e in result.events]
    assert types.index("tool.started") < types.index("tool.completed")
    if usage:
        assert types.index("tool.completed") < types.index("usage")
        assert result.usage.input_tokens == 250 and result.usage.output_tokens == 30
    assert types[-1] == "turn.completed" and types.count("turn.completed") == 1
    return types


def state_text(state_root: Path, suffixes: tuple[str, ...] = (".json",)) -> str:
    """Everything the adapter wrote under the state root in files with ``suffixes``."""
    return "".join(
        p.read_text(errors="ignore") for p in state_root.rglob("*") if p.suffix in suffixes
    )


@dataclass
class CliUnderTest:
    """One harness as its suite drives it: ``controller(**kwargs)`` builds a fresh controller
    (fresh adapter) each time, ``config(url, **extra)`` the session config for a server URL."""

    harness: str
    model: str
    workspace: str
    controller: Callable[..., Any]
    config: Callable[..., dict[str, Any]]
    #: ``fake(tmp_path, body)``: the config (without ``base_url``) of a stand-in CLI that runs
    #: the Python ``body`` instead of the real one.
    fake: Callable[[Path, str], dict[str, Any]] | None = None
    #: The fake model's endpoint the CLI speaks: ``anthropic`` (Messages) or ``openai`` (/v1).
    api: str = "openai"
    session_leader: int | None = None

    def url(self, server: Any, endpoint: str | None = None) -> str:
        """The server's URL for ``endpoint`` (default: the CLI's :attr:`api`)."""
        anthropic = (endpoint or self.api) == "anthropic"
        return str(server.base_url if anthropic else server.openai_base_url)

    def tool_turn_and_resume(
        self,
        tool_call: Any,
        tool_name: str,
        *,
        endpoint: str | None = None,
        timeout: float = 90,
        tool_requests_only: bool = False,
        **extra: Any,
    ) -> tuple[Any, Any]:
        """The tool scenario (:func:`tool_script`): a turn whose tool call writes ``out.txt``,
        then a resume in a new controller; asserts what every CLI must show and returns the
        server and the first turn's result for the CLI's own checks."""
        from harness_core.testing.fake_model import FakeModelServer

        with FakeModelServer(tool_script(tool_call)) as server:
            config = self.config(self.url(server, endpoint), **extra)
            result, again = self.turn_then_resume(config, timeout)
        assert_tool_turn(result, self.workspace)
        tool = next(e.payload for e in result.events if e.type == "tool.completed")
        # the completion's summary may add the outcome ("... (ok: exit code 0)")
        assert tool.name == tool_name and tool.ok
        assert tool.summary.startswith("ran a shell command"), tool.summary
        started = next(e.payload for e in result.events if e.type == "tool.started")
        assert "out.txt" in (started.summary or ""), started  # the audit line names the command
        assert again.status == "completed", again
        assert again.text == SECOND
        # the resumed request carried the first turn's history
        requests = server.model_requests()
        assert "create out.txt" in json.dumps(requests[-1].body)
        if tool_requests_only:  # not the CLI's side requests (titles...)
            requests = [r for r in requests if r.tool_names]
        assert [r.step_index for r in requests] == [0, 1, 2]
        return server, result

    async def open_session(self, c: Any, config: dict[str, Any], **open_kwargs: Any) -> Any:
        """Open a session of this CLI's harness in controller ``c`` (its workspace and model)."""
        return await c.open_session(
            harness=self.harness,
            workspace=self.workspace,
            model=self.model,
            config=config,
            **open_kwargs,
        )

    def turn(
        self, config: dict[str, Any], prompt: str = "hi", timeout: float = 60, **open_kwargs: Any
    ) -> tuple[Any, float]:
        """One turn in a new session; returns the result and how long it took. However the
        turn ended, none of its processes is left."""

        async def main() -> Any:
            async with self.controller(turn_timeout=timeout) as c:
                ref = await self.open_session(c, config, **open_kwargs)
                result = await c.run_turn(ref, prompt)
                assert c.live(ref.session_id).context.turn_processes == []
                return result

        started = time.monotonic()
        result = anyio.run(main)
        return result, time.monotonic() - started

    def turn_then_resume(
        self, config: dict[str, Any], timeout: float = 90, prompt: str = "create out.txt"
    ) -> tuple[Any, Any]:
        """A turn, then "say it again" in a new controller that resumes the session. The first
        session's process (a session-lifetime agent) is kept in :attr:`session_leader`."""

        async def first() -> tuple[Any, Any]:
            async with self.controller(turn_timeout=timeout) as c:
                ref = await self.open_session(c, config)
                result = await c.run_turn(ref, prompt)
                processes = c.live(ref.session_id).context.session_processes
                self.session_leader = processes[0].pid if processes else None
            return ref, result

        ref, result = anyio.run(first)

        async def second() -> Any:
            async with self.controller(turn_timeout=timeout) as c:
                await c.resume_session(
                    ref, workspace=self.workspace, model=self.model, config=config
                )
                return await c.run_turn(ref, "say it again")

        return result, anyio.run(second)

    def cancel_mid_turn(self, server: Any, config: dict[str, Any]) -> tuple[Any, int, float]:
        """Cancel a turn once its CLI is talking to the model; returns the last event, the
        turn process's pid and how long the cancel took."""

        async def main() -> tuple[Any, int, float]:
            async with self.controller(turn_timeout=90) as c:
                ref = await self.open_session(c, config)
                async with c.turn(ref, "hang please") as turn:
                    async for event in turn:
                        if event.type == "status":
                            context = c.live(ref.session_id).context
                            with anyio.fail_after(30):  # the CLI is talking to the model
                                while not server.model_requests():
                                    await anyio.sleep(0.05)
                            leader = context.turn_processes[0].pid
                            assert_alive(leader)
                            started = time.monotonic()
                            await c.cancel_turn(ref, turn.turn_id)
                        last = event
                return last, leader, time.monotonic() - started

        return anyio.run(main)

    def assert_steers(self, tool_call: Any) -> None:
        """Steer a running turn (its first model reply waits 3 s and calls ``tool_call``):
        the steer text is in the turn's next model request and not in its first, the turn
        makes exactly those two requests and ends with one terminal; with no running turn a
        steer is ``turn-not-found`` and records nothing."""
        from harness_hookspecs import HarnessError

        from harness_core.testing.fake_model import FakeModelServer, Match, Step

        text = "also mention the colour teal"
        script = [
            Step(text="Looking.", tool_calls=[tool_call], delay=3),
            Step(text="Done, teal.", match=Match(tool_result=True)),
        ]

        async def main() -> tuple[list[Any], list[Any]]:
            async with self.controller(turn_timeout=90) as c:
                ref = await self.open_session(c, self.config(self.url(server)))
                try:
                    await c.steer(ref, text)
                    raise AssertionError("a steer with no running turn was accepted")
                except HarnessError as error:
                    assert error.reason == "turn-not-found", error
                events: list[Any] = []
                async with c.turn(ref, "say hi") as turn:
                    async for event in turn:
                        events.append(event)
                        if event.type == "status" and not any(
                            e.type == "turn.steered" for e in events
                        ):
                            while not server.model_requests():
                                await anyio.sleep(0.05)
                            await c.steer(ref, text)
                return events, c.events(ref.session_id)

        with FakeModelServer(script) as server:
            events, recorded = anyio.run(main)
            requests = server.model_requests()
        kinds = [e.type for e in events]
        assert kinds.count("turn.steered") == 1, kinds
        assert [e.terminal for e in events].count(True) == 1 and kinds[-1] == "turn.completed"
        assert len({e.turn_id for e in events}) == 1
        assert text not in json.dumps(requests[0].body)
        assert text in json.dumps(requests[-1].body)
        assert len(requests) == 2  # one turn: the tool's result and the steer in one request
        assert [e.type for e in recorded].count("turn.steered") == 1

    def assert_forks(self) -> None:
        """Two turns (ALPHA, BRAVO), a fork at the end of the first, a turn in the child
        (CHARLIE) and one in the parent (DELTA): the child's model request holds ALPHA and
        CHARLIE, not BRAVO; the parent's holds ALPHA, BRAVO and DELTA, not CHARLIE; a second
        child turn resumes the child's own conversation; a fork at the parent's last event
        holds all its turns; ``session.forked`` in both ledgers."""
        from harness_core.testing.fake_model import FakeModelServer, Step

        async def main() -> Any:
            async with self.controller(turn_timeout=90) as c:
                parent = await self.open_session(c, self.config(self.url(server)))
                first = await c.run_turn(parent, "the word is ALPHA")
                assert first.ok, first.reason
                assert (await c.run_turn(parent, "the word is BRAVO")).ok
                server.clear_requests()
                child = await c.fork(parent, at=first.events[-1].event_id)
                in_child = await c.run_turn(child, "the word is CHARLIE")
                child_body = _last_body(server)
                again = await c.run_turn(child, "the word is ECHO")
                again_body = _last_body(server)
                in_parent = await c.run_turn(parent, "the word is DELTA")
                parent_body = _last_body(server)
                whole = await c.fork(parent)  # at its last event: every turn
                in_whole = await c.run_turn(whole, "the word is FOXTROT")
                results = (in_child, again, in_parent, in_whole)
                bodies = (child_body, again_body, parent_body, _last_body(server))
                return results, bodies, c.events(parent.session_id), c.events(child.session_id)

        with FakeModelServer([Step(text="noted", times=None)]) as server:
            results, bodies, parent_events, child_events = anyio.run(main)
        assert all(result.ok for result in results), [r.reason for r in results]
        child_body, again_body, parent_body, whole_body = bodies
        assert "ALPHA" in child_body and "CHARLIE" in child_body and "BRAVO" not in child_body
        assert "CHARLIE" in again_body and "ECHO" in again_body and "BRAVO" not in again_body
        assert "ALPHA" in parent_body and "BRAVO" in parent_body and "DELTA" in parent_body
        assert "CHARLIE" not in parent_body and "ECHO" not in parent_body
        assert all(word in whole_body for word in ("ALPHA", "BRAVO", "DELTA", "FOXTROT"))
        assert "CHARLIE" not in whole_body
        assert [e.type for e in parent_events].count("session.forked") == 2
        assert [e.type for e in child_events][:2] == ["session.opened", "session.forked"]

    def assert_rewinds_conversation(self) -> None:
        """Three turns (ALPHA, BRAVO, CHARLIE), a rewind to the second turn's start checkpoint,
        then DELTA: its model request holds ALPHA and DELTA, not BRAVO or CHARLIE; a second
        rewind (to the first turn's start) then ECHO: nothing of the earlier turns; the ledger
        still holds every event, in order."""
        from harness_core.testing.fake_model import FakeModelServer, Step

        async def main() -> Any:
            async with self.controller(turn_timeout=90, checkpoints=True) as c:
                ref = await self.open_session(c, self.config(self.url(server)))
                for word in ("ALPHA", "BRAVO", "CHARLIE"):
                    result = await c.run_turn(ref, f"the word is {word}")
                    assert result.ok, result.reason
                before = c.events(ref.session_id)
                starts = [
                    e.payload.checkpoint_id
                    for e in before
                    if e.type == "checkpoint.created" and e.payload.reason == "turn-start"
                ]
                rewound = await c.rewind(ref, starts[1])  # before turn 2
                after = await c.run_turn(ref, "the word is DELTA")
                after_body = _last_body(server)
                again = await c.rewind(ref, starts[0])  # before turn 1
                fresh = await c.run_turn(ref, "the word is ECHO")
                bodies = (after_body, _last_body(server))
                return (rewound, again), (after, fresh), bodies, before, c.events(ref.session_id)

        with FakeModelServer([Step(text="noted", times=None)]) as server:
            rewinds, results, bodies, before, every = anyio.run(main)
        assert [(r.conversation, r.turns_kept) for r in rewinds] == [(True, 1), (True, 0)]
        assert all(result.ok for result in results), [r.reason for r in results]
        after_body, fresh_body = bodies
        assert "ALPHA" in after_body and "DELTA" in after_body
        assert "BRAVO" not in after_body and "CHARLIE" not in after_body
        assert "ECHO" in fresh_body
        assert not any(word in fresh_body for word in ("ALPHA", "BRAVO", "CHARLIE", "DELTA"))
        assert every[: len(before)] == before  # the ledger still holds every event

    def structured_turn(
        self, script: list[Any], schema: dict[str, Any], *, retries: int = 2, timeout: float = 90
    ) -> tuple[Any, list[Any], list[Any]]:
        """One turn run with ``output_schema`` against ``script``; returns the result, the
        session's events from the ledger and the fake model's recorded requests."""
        from harness_core.testing.fake_model import FakeModelServer

        with FakeModelServer(script) as server:
            config = self.config(self.url(server))

            async def main() -> tuple[Any, list[Any]]:
                async with self.controller(turn_timeout=timeout) as c:
                    ref = await self.open_session(c, config)
                    result = await c.run_turn(
                        ref, "decide", output_schema=schema, output_retries=retries
                    )
                    return result, c.events(ref.session_id)

            result, events = anyio.run(main)
        return result, events, server.model_requests()

    def host_loop(
        self, script: list[Any], schema: dict[str, Any], execute: Callable[[Any], Any]
    ) -> tuple[Any, list[Any], list[Any]]:
        """:func:`harness_core.host_loop.host_loop` from "tidy up" against ``script``; returns
        the loop's result, the session's events and the recorded requests."""
        from harness_core.host_loop import host_loop
        from harness_core.testing.fake_model import FakeModelServer

        with FakeModelServer(script) as server:
            config = self.config(self.url(server))

            async def main() -> tuple[Any, list[Any]]:
                async with self.controller(turn_timeout=90) as c:
                    ref = await self.open_session(c, config)
                    loop = await host_loop(c, ref, "tidy up", schema=schema, execute=execute)
                    return loop, c.events(ref.session_id)

            loop, events = anyio.run(main)
        return loop, events, server.model_requests()

    def fake_turn(self, tmp_path: Path, body: str) -> Any:
        """One turn of a stand-in CLI running ``body`` (the endpoint is up: no probe fails)."""
        from harness_core.testing.fake_model import FakeModelServer

        assert self.fake is not None
        with FakeModelServer([]) as server:
            config = {**self.fake(tmp_path, body), "base_url": self.url(server)}
            result, _ = self.turn(config, timeout=30)
        return result

    def state_root(self) -> Path:
        return Path(self.controller().state_root)


def _last_body(server: Any) -> str:
    """The last model request's body as JSON text."""
    return json.dumps(server.model_requests()[-1].body)


def assert_alive(pid: int) -> None:
    from harness_core.testing.processes import alive, group_members

    assert alive(pid) and group_members(pid)


def assert_cancelled_cleanly(outcome: tuple[Any, int, float]) -> None:
    """:meth:`CliUnderTest.cancel_mid_turn`'s outcome: cancelled by the host within 5 s, and
    the turn's process group is gone."""
    last, leader, took = outcome
    print(f"\ncancel: turn.cancelled after {took:.2f}s")
    assert last.type == "turn.cancelled" and last.payload.by == "host"
    assert took < 5
    from harness_core.testing.processes import alive, group_members

    assert not alive(leader) and group_members(leader) == []


def __getattr__(name: str) -> Any:
    # DECISION_SCHEMA: the host loop's STEP_SCHEMA, imported when asked (harness_core is lazy)
    if name == "DECISION_SCHEMA":
        from harness_core.host_loop import STEP_SCHEMA

        return dict(STEP_SCHEMA)
    raise AttributeError(name)


def one_terminal(events: list[Any]) -> Any:
    """The session's only terminal event (asserted), which is its turn's last event."""
    terminals = [e for e in events if e.terminal]
    assert len(terminals) == 1, [e.type for e in events]
    turn_events = [e for e in events if e.turn_id == terminals[0].turn_id]
    assert turn_events[-1] is terminals[0]
    return terminals[0]


def assert_linked_loop(loop: Any, events: list[Any], iterations: int) -> None:
    """A host loop that ended ``done`` after ``iterations`` turns, each later turn's
    ``turn.started`` naming the previous turn's ``turn.completed`` as its parent."""
    assert loop.status == "done", loop
    started = [e for e in events if e.type == "turn.started"]
    completed = [e for e in events if e.type == "turn.completed"]
    assert len(started) == len(completed) == iterations
    assert started[0].parent_event_id is None
    assert [s.parent_event_id for s in started[1:]] == [c.event_id for c in completed[:-1]]
    assert [c.payload.output for c in completed] == [step.decision for step in loop.steps]


def three_iteration_loop(cli: CliUnderTest, answer: Callable[..., Any]) -> list[Any]:
    """decide -> execute -> resume, three times: ``answer(decision, contains=...)`` is the CLI's
    way to script a decision. Asserts the linked loop; returns the recorded requests."""
    from harness_core.host_loop import STEP_SCHEMA

    script = [
        answer({"step": "actions", "actions": ["count files"]}, contains="tidy up"),
        answer({"step": "actions", "actions": ["read README"]}, contains="count files: ok"),
        answer({"step": "done", "answer": "all good"}, contains="read README: ok"),
    ]
    executed: list[Any] = []

    def execute(decision: Any) -> Any:
        executed.append(decision["actions"])
        return {"results": [f"{action}: ok" for action in decision["actions"]]}

    loop, events, requests = cli.host_loop(script, dict(STEP_SCHEMA), execute)
    assert_linked_loop(loop, events, 3)
    assert executed == [["count files"], ["read README"]]
    return requests


def assert_failed(result: Any, reason: str, *, hidden: str = "secret upstream text") -> None:
    """A failed turn with ``reason``, and the provider's text on no event."""
    assert result.status == "failed" and result.reason == reason, result
    assert hidden not in repr(result.events)


def cli_fixture(
    harness: str, profile: OfflineProfile, adapter: Callable[[], Any], key_var: str, secret: str
) -> Any:
    """The ``cli`` fixture of an adapter's suite (``cli = cli_fixture(...)`` in its conftest):
    the harness with a fresh ``adapter()`` and ``secret`` injected as ``key_var`` per
    controller, driving the installed ``profile.binary`` (skipped when it is not installed)."""

    @pytest.fixture(name="cli")
    def fixture(workspace: str, make_controller: Callable[..., Any]) -> CliUnderTest:
        def controller(**kwargs: Any) -> Any:
            return make_controller(adapter(), StaticCredentials(key_var, secret), **kwargs)

        def config(url: str, **extra: Any) -> dict[str, Any]:
            path = installed_cli(profile.binary)
            binary: Any = path if profile.binary_key == "cli_path" else [path]
            return {profile.binary_key: binary, "base_url": url, **extra}

        def fake(tmp_path: Path, body: str) -> dict[str, Any]:
            if profile.binary_key == "cli_path":  # checked for a version at open
                return {"cli_path": fake_cli(tmp_path, f"fake-{profile.binary}", "1.0.0", body)}
            return {"command": [sys.executable, "-c", textwrap.dedent(body)]}

        return CliUnderTest(
            harness, profile.model, workspace, controller, config, fake, profile.api
        )

    return fixture


GARBAGE = "print('Traceback: secret provider text'); print('{')\n"


class CliScenarios:
    """What every CLI adapter must do, against its real CLI and the fake model server. A suite
    runs them with ``class TestScenarios(CliScenarios): ...`` next to its ``cli`` fixture,
    overriding the class attributes where its CLI differs."""

    #: How fast a rejected key and an unreachable endpoint must end the turn (seconds).
    auth_within = 30.0
    unreachable_within = 10.0

    @pytest.mark.cli
    def test_cancel_mid_turn_leaves_no_process(self, cli: CliUnderTest) -> None:
        from harness_core.testing.fake_model import FakeModelServer, Step

        with FakeModelServer([Step(text="late", delay=60)]) as server:
            assert_cancelled_cleanly(cli.cancel_mid_turn(server, cli.config(cli.url(server))))

    @pytest.mark.cli
    def test_401_is_authentication_required_fast(self, cli: CliUnderTest) -> None:
        from harness_core.testing.fake_model import FakeModelServer

        with FakeModelServer([error_step(401)]) as server:
            result, took = cli.turn(cli.config(cli.url(server)), timeout=30)
        print(f"\n401: {result.reason} after {took:.2f}s")
        assert_failed(result, "authentication-required")
        assert took < self.auth_within

    @pytest.mark.cli
    def test_unreachable_is_provider_unavailable_fast(self, cli: CliUnderTest) -> None:
        url = unreachable_url("" if cli.api == "anthropic" else "/v1")
        result, took = cli.turn(cli.config(url), timeout=30)
        print(f"\nunreachable: {result.reason} after {took:.2f}s")
        assert_failed(result, "provider-unavailable")
        assert took < self.unreachable_within

    def test_garbage_output_is_provider_failed(self, cli: CliUnderTest, tmp_path: Path) -> None:
        result = cli.fake_turn(tmp_path, GARBAGE)
        assert_failed(result, "provider-failed", hidden="secret provider text")


class CliBranchScenarios:
    """Fork and conversation rewind against the real CLI, for an adapter that claims ``fork``
    and ``checkpoint``: ``class TestBranches(CliBranchScenarios): ...`` next to its ``cli``
    fixture (:meth:`CliUnderTest.assert_forks`, :meth:`CliUnderTest.assert_rewinds_conversation`)."""

    @pytest.mark.cli
    def test_fork_at_turn_one_holds_turn_one_and_nothing_after(self, cli: CliUnderTest) -> None:
        cli.assert_forks()

    @pytest.mark.cli
    def test_rewind_drops_the_later_turns_from_the_model(self, cli: CliUnderTest) -> None:
        cli.assert_rewinds_conversation()


class CheckedCliScenarios(CliScenarios):
    """:class:`CliScenarios` for adapters that find and version-check their binary at open and
    bound their CLI's own retries."""

    #: Session config for the HTTP 500 case, and how many model requests it may take.
    on_500: dict[str, Any] = {}
    requests_after_500 = range(1, 5)

    @pytest.mark.cli
    @pytest.mark.parametrize("case", ["deadline", "500", "dropped"])
    def test_failures_are_mapped_within_the_deadline(self, cli: CliUnderTest, case: str) -> None:
        from harness_core.testing.fake_model import FakeModelServer, Step

        step, extra, reason = {
            "deadline": (Step(text="late", delay=60), {}, "timeout"),
            "500": (error_step(500), self.on_500, "provider-unavailable"),
            "dropped": (dropped_step(), {"max_retries": 0}, "provider-failed"),
        }[case]
        with FakeModelServer([step]) as server:
            config = cli.config(cli.url(server), **extra)
            result, took = cli.turn(config, timeout=4 if case == "deadline" else 30)
            requests = len(server.model_requests())
        print(f"\n{case}: {result.reason} after {took:.2f}s, {requests} requests")
        assert_failed(result, reason)
        assert "ECONNRESET" not in repr(result.events)
        assert took < 10
        assert case != "500" or requests in self.requests_after_500

    def test_missing_cli_is_provider_unavailable(self, cli: CliUnderTest, tmp_path: Path) -> None:
        from harness_hookspecs import HarnessError

        with pytest.raises(HarnessError) as info:
            cli.turn({"cli_path": str(tmp_path / "nope"), "base_url": "http://127.0.0.1:9"})
        assert info.value.reason == "provider-unavailable"
