"""The kit's own pieces, without a CLI: locator order, native state, stream base, probe."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import anyio
import pytest
from harness_cli_kit import (
    CLI_PATH_ENV,
    JsonLinesStream,
    NativeSession,
    command_of,
    endpoint_reachable,
    find_cli,
    safe_prompt,
)
from harness_cli_kit.conformance import OfflineProfile
from harness_hookspecs import HarnessError, MessageDelta, Payload, ProcessHandle, TurnCompleted


def executable(directory: Path, name: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\necho 1.2.3\n")
    path.chmod(0o755)
    return str(path)


def test_locator_order_config_then_path_then_test_location(tmp_path, monkeypatch):
    on_path = executable(tmp_path / "path", "tool")
    pinned = executable(tmp_path / "pinned", "tool")
    configured = executable(tmp_path / "configured", "tool")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv(
        CLI_PATH_ENV, os.pathsep.join([str(tmp_path / "none"), str(tmp_path / "pinned")])
    )
    assert find_cli({"cli_path": configured}, "tool") == configured
    assert find_cli({}, "tool") == on_path
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_cli({}, "tool") == pinned
    monkeypatch.delenv(CLI_PATH_ENV)
    assert find_cli({}, "tool") is None
    assert find_cli({"cli_path": str(tmp_path / "missing")}, "tool") is None
    with pytest.raises(HarnessError) as info:
        find_cli({"cli_path": ""}, "tool")
    assert info.value.reason == "invalid-request"


def test_offline_profile_without_the_cli_is_provider_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(CLI_PATH_ENV, raising=False)
    with pytest.raises(HarnessError) as info:
        OfflineProfile("no-such-cli", "m").config()
    assert info.value.reason == "provider-unavailable"
    pinned = executable(tmp_path / "pinned", "agent")
    monkeypatch.setenv(CLI_PATH_ENV, str(tmp_path / "pinned"))
    profile = OfflineProfile("agent", "m", args=("--acp",), extra={"provider": "x"}, port=1234)
    assert profile.config() == {"command": [pinned, "--acp"], "api_key": "sk-conf", "provider": "x"}


def test_command_of():
    assert command_of({}, ["pi"]) == ["pi"]
    assert command_of({"command": "pi --x 'a b'"}, ["pi"]) == ["pi", "--x", "a b"]
    for bad in ([], [1], 3):
        with pytest.raises(HarnessError):
            command_of({"command": bad}, ["pi"])
    # a JSON text nested past the interpreter's depth (HARNESS_JSONL_COMMAND): not an exception
    with pytest.raises(HarnessError) as deep:
        command_of({"command": "[" * 20_000 + "]" * 20_000}, ["pi"])
    assert (deep.value.reason, deep.value.hint) == ("invalid-request", "command is not valid JSON")


def test_native_session_round_trip_and_missing_state(tmp_path):
    session = NativeSession.create(str(tmp_path), "x.json")
    assert NativeSession.load(str(tmp_path), "x.json", what="no x state").native_id is None
    session.remember("n-1", agent="a")
    session.remember("n-2")  # the first id stays
    loaded = NativeSession.load(str(tmp_path), "x.json", what="no x state")
    assert loaded.native_id == "n-1"
    (tmp_path / "x.json").write_text("{not json")
    for name in ("x.json", "absent.json"):
        with pytest.raises(HarnessError) as info:
            NativeSession.load(str(tmp_path), name, what="no x state")
        assert info.value.reason == "session-not-found"


class Echo(JsonLinesStream):
    cli = "echo"

    def event(self, data: dict) -> list[Payload]:
        if data.get("type") == "fail":
            self.failure = "authentication-required"
        return [MessageDelta(text=data["text"])] if "text" in data else []

    def terminal(self, exit_code: int | None) -> Payload:
        if self.failure is not None:
            return self.failed(self.failure)
        return self.exit_failure(exit_code) or TurnCompleted()


def test_stream_base_drops_garbage_and_bounds_lines():
    class Small(Echo):
        max_line = 40

    lines = [b"", b"not json", b"[1]", b'{"text": "hi"}', b'{"text": "' + b"x" * 50 + b'"}']
    stream = Small()
    out = [p for line in lines for p in stream.feed(line)]
    assert out == [MessageDelta(text="hi")] and stream.garbage == 3
    assert Echo.parse([b'{"text": "a"}'], exit_code=2)[-1].hint == "echo exited with status 2"
    ended = Echo.parse([b'{"type": "fail"}', b'{"text": "never"}'])
    assert [type(p) for p in ended] == [type(ended[-1])] and ended[-1].reason == (
        "authentication-required"
    )


def test_safe_prompt():
    assert safe_prompt("-rf") == " -rf" and safe_prompt("@f", ("-", "@")) == " @f"
    assert safe_prompt("hi") == "hi"


def test_endpoint_reachable():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert anyio.run(endpoint_reachable, f"http://127.0.0.1:{port}/v1", None)
    assert not anyio.run(endpoint_reachable, f"http://127.0.0.1:{port}/v1", None)


def test_cli_version_is_remembered_across_processes_per_binary(tmp_path, monkeypatch):
    """``--version`` is asked once per binary (path, mtime, size), not once per ``harness run``;
    a replaced binary is asked again."""
    from harness_cli_kit import locate

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 1.2.3\n")
    tool.chmod(0o755)
    assert locate.version_sync(str(tool)) == "1.2.3"
    locate.forget_versions()  # a new process: only the file cache is left
    assert locate.version_sync(str(tool)) == "1.2.3"
    assert calls.read_text().count("x") == 1
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 2.0.10\n")  # upgraded (size differs)
    locate.forget_versions()
    assert locate.version_sync(str(tool)) == "2.0.10"
    assert calls.read_text().count("x") == 2


class _Lines(JsonLinesStream):
    """Ends at ``{"done": true}`` when ``stop_at_done``; else at the program's exit."""

    def __init__(self, stop_at_done: bool) -> None:
        super().__init__()
        self.stop_at_done = stop_at_done
        self.done = False

    def event(self, data: dict) -> list[Payload]:
        self.done = self.done or data.get("done") is True
        return [MessageDelta(text=str(data.get("text", "")))] if "text" in data else []

    def finished(self) -> bool:
        return self.stop_at_done and self.done

    def terminal(self, exit_code: int | None) -> Payload:
        return TurnCompleted(text=str(exit_code))


#: Writes its terminal line, then lingers with a child of its own (as a CLI shutting down).
LINGERING = (
    'sleep 60 & echo "$!" > "$1"; echo \'{"text": "hi"}\'; echo \'{"done": true}\'; sleep 60'
)


@pytest.mark.parametrize("stop_at_done", [True, False])
def test_the_relay_stops_at_the_terminal_line_and_the_tree_is_gone(tmp_path, stop_at_done):
    """finished(): the relay returns at the terminal line (not at the program's exit, a minute
    later) and the program's whole tree is gone; without it the stream waits for the exit."""
    from harness_core.process import spawn

    pid_file = tmp_path / "child.pid"

    async def main() -> tuple[list[Payload], int | None]:
        process = await spawn(
            ["/bin/sh", "-c", LINGERING if stop_at_done else "echo '{\"done\": true}'", "sh",
             str(pid_file)],
            env={"PATH": os.defpath}, cwd=str(tmp_path), stdin=False,
        )  # fmt: skip
        stream = _Lines(stop_at_done)
        with anyio.fail_after(20):
            out = [payload async for payload in stream.drive(process, lambda _: None)]
        await process.terminate(0)  # the runtime's clean-up: nothing left to do when stopped
        return out, process.returncode

    out, returncode = anyio.run(main)
    assert isinstance(out[-1], TurnCompleted)
    if stop_at_done:
        assert [p.text for p in out if isinstance(p, MessageDelta)] == ["hi"]
        assert out[-1].text == "None"  # stopped before the exit: no exit code
        assert returncode is not None  # killed and reaped
        child = int(pid_file.read_text())
        assert (
            not Path(f"/proc/{child}").exists()
            or b") Z" in Path(f"/proc/{child}/stat").read_bytes()
        )
    else:
        assert out[-1].text == "0"


class _Answering(_Lines):
    """Answers every line on the program's stdin (as Codex's JSON-RPC client does)."""

    async def respond(self, process: ProcessHandle) -> list[Payload]:
        await process.send(b'{"ack": true}\n')
        return []


#: Stops reading its stdin at once, writes two lines and dies (a CLI crashing mid-conversation).
DEAF = 'exec 0<&-; echo \'{"text": "a"}\'; sleep 0.3; echo \'{"text": "b"}\'; exit 3'


def test_a_program_that_stops_reading_ends_by_what_it_wrote_not_our_failed_write(tmp_path):
    """Our answer to a dying program fails (broken pipe): the relay stops answering and keeps
    reading, so the turn ends by the program's output and exit status, not by the write."""
    from harness_core.process import spawn

    async def main() -> list[Payload]:
        process = await spawn(
            ["/bin/sh", "-c", DEAF], env={"PATH": os.defpath}, cwd=str(tmp_path), stdin=True
        )
        stream = _Answering(False)
        with anyio.fail_after(20):
            out = [payload async for payload in stream.drive(process, lambda _: None)]
        await process.terminate(0)
        return out

    out = anyio.run(main)
    assert [p.text for p in out if isinstance(p, MessageDelta)] == ["a", "b"]
    assert isinstance(out[-1], TurnCompleted) and out[-1].text == "3"


def test_branches_keep_marks_and_a_pending_branch_until_a_turn_makes_it(tmp_path):
    from harness_cli_kit import Branches
    from harness_hookspecs import (
        ConversationTurn,
        ForkSessionRequest,
        OpenSessionRequest,
        SessionRef,
    )

    parent = tmp_path / "parent"
    parent.mkdir()
    marks = Branches.load(parent, "b.json")  # no file yet: nothing
    assert marks.turns == [] and marks.pending is None
    for ours, mark in (("t1", "m1"), ("t2", "m2"), ("t3", "m3")):
        marks.add(ours, mark)
    marks.save()
    # a rewind that drops nothing marked changes nothing
    Branches.rewound(parent, "b.json", ["t1", "t2", "t3"], lambda b: {"x": 1})
    assert Branches.load(parent, "b.json").pending is None
    Branches.rewound(parent, "b.json", ["t1"], lambda b: {"before": b.first_dropped(["t1"])})
    again = Branches.load(parent, "b.json")
    assert again.turns == [("t1", "m1")] and again.pending == {"before": "m2"}

    def fork(turns):
        return ForkSessionRequest(
            parent=SessionRef(provider="x", target="local", session_id="p"),
            open=OpenSessionRequest(harness="x", workspace=str(tmp_path)),
            turns=[ConversationTurn(t, "p", "a") for t in turns],
            parent_state_dir=str(parent),
        )

    assert Branches.of_parent(fork([]), "b.json") is None  # keeps no marked turn
    assert Branches.of_parent(fork(["t9"]), "b.json") is None
    _, carried, kept = Branches.of_parent(fork(["t1"]), "b.json")
    child = tmp_path / "child"
    child.mkdir()
    carried.save_child(child, kept, {"at": "m1"})
    assert Branches.load(child, "b.json").turns == [("t1", "m1")]
    assert Branches.load(child, "b.json").pending == {"at": "m1"}
