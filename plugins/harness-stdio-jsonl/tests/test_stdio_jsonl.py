"""The stdio-jsonl adapter against real subprocesses."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError, MessageDelta
from harness_stdio_jsonl import StdioJsonlAdapter
from harness_stdio_jsonl.adapter import parse_line

from harness_core import Controller, plugins_from
from harness_core.testing.processes import alive, group_members

REFERENCE = [sys.executable, "-m", "harness_stdio_jsonl.reference"]


def controller(tmp_path: Path, **kwargs) -> Controller:
    return Controller(
        plugins=plugins_from([StdioJsonlAdapter()]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
        env_passthrough=("PYTHONPATH",),
        **kwargs,
    )


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def one_turn(tmp_path, workspace, command, prompt, **config):
    async with controller(tmp_path) as c:
        ref = await c.open_session(
            harness="stdio-jsonl", workspace=workspace, config={"command": command, **config}
        )
        return await c.run_turn(ref, prompt)


def test_reference_program_completes_and_extra_fields_are_dropped(tmp_path, workspace):
    result = anyio.run(one_turn, tmp_path, workspace, REFERENCE, "hello jsonl world")
    assert result.status == "completed", result
    assert result.text == "hello jsonl world"
    assert result.usage.input_tokens == 3
    deltas = [e.payload for e in result.events if e.type == "message.delta"]
    assert deltas[0] == MessageDelta(text="hello")


def test_tool_call_writes_a_file_in_the_workspace(tmp_path, workspace):
    result = anyio.run(one_turn, tmp_path, workspace, REFERENCE, "write notes.txt it works")
    assert result.status == "completed"
    assert (Path(workspace) / "notes.txt").read_text() == "it works\n"
    types = [e.type for e in result.events]
    assert types.index("tool.started") < types.index("tool.completed")


def test_failed_terminal_from_the_program(tmp_path, workspace):
    result = anyio.run(one_turn, tmp_path, workspace, REFERENCE, "fail now")
    assert result.status == "failed" and result.reason == "provider-unavailable"


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        ("print('Traceback: secret provider text')", "not JSON"),
        (
            "import json; print(json.dumps({'type': 'message.delta', 'text': 'x'}))",
            "without ending",
        ),
        ("import sys; sys.exit(3)", "status 3"),
        # stdout closed, the program lives on: the turn ends now (not at its deadline)
        ("import os, time; os.close(1); time.sleep(120)", "closed its output"),
        # nested past the interpreter's depth: garbage, not an exception from the parser
        ("print('{\"type\": \"usage\", \"x\": ' + '[' * 100000 + ']' * 100000 + '}')", "not JSON"),
        (
            "import json; print(json.dumps({'type': 'status', 'message': 'x' * 500}))",
            "invalid status",
        ),
    ],
)
def test_garbage_and_truncated_streams_are_provider_failed(tmp_path, workspace, body, hint):
    result = anyio.run(one_turn, tmp_path, workspace, script(tmp_path, body), "hi")
    assert result.status == "failed" and result.reason == "provider-failed"
    assert hint in (result.events[-1].payload.hint or "")
    assert "secret provider text" not in repr(result.events)


LEAVES_A_CHILD = """
import subprocess, sys
sys.stdin.readline()
subprocess.Popen(["sleep", "120"])  # inherits stdout: the output stays open after the exit
print('{"type": "message.delta", "text": "bye"}', flush=True)
"""


@pytest.mark.parametrize("mode", ["per-turn", "session"])
def test_a_program_that_exits_leaving_a_child_on_its_stdout_ends_its_turn(
    tmp_path, workspace, mode
):
    # the exit ends the turn (after a short grace), not the turn's deadline
    async def main():
        async with controller(tmp_path) as c:
            config = {"command": script(tmp_path, LEAVES_A_CHILD), "mode": mode}
            ref = await c.open_session(harness="stdio-jsonl", workspace=workspace, config=config)
            return await c.run_turn(ref, "hi", timeout=60)

    result = anyio.run(main)
    failed = result.events[-1].payload
    assert (result.status, failed.reason, failed.hint) == (
        "failed",
        "provider-failed",
        "the program exited without ending the turn",
    ), failed


def test_unknown_types_are_ignored():
    assert parse_line(b'{"type": "vendor.thing", "x": 1}') is None
    with pytest.raises(HarnessError):
        parse_line(b"[1, 2]")


def test_missing_command_is_invalid_request(tmp_path, workspace, monkeypatch):
    monkeypatch.delenv("HARNESS_JSONL_COMMAND", raising=False)

    async def main():
        async with controller(tmp_path) as c:
            with pytest.raises(HarnessError) as info:
                await c.open_session(harness="stdio-jsonl", workspace=workspace)
            return info.value.reason

    assert anyio.run(main) == "invalid-request"


@pytest.mark.parametrize("mode", ["per-turn", "session"])
def test_cancel_kills_the_process_group(tmp_path, workspace, mode):
    # The program forks a grandchild in the same group: both must be gone after cancel.
    body = """
        import json, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        for line in sys.stdin:
            print(json.dumps({"type": "status", "message": "pids %d %d" % (child.pid, 0)}), flush=True)
            time.sleep(60)
    """
    command = script(tmp_path, body)

    async def main():
        async with controller(tmp_path) as c:
            ref = await c.open_session(
                harness="stdio-jsonl",
                workspace=workspace,
                config={"command": command, "mode": mode},
            )
            async with c.turn(ref, "go") as turn:
                async for event in turn:
                    if event.type == "status":
                        child = int(event.payload.message.split()[1])
                        context = c.live(ref.session_id).context
                        procs = context.turn_processes + context.session_processes
                        leader = procs[0].pid
                        assert alive(child) and alive(leader)
                        with anyio.fail_after(3):
                            await c.cancel_turn(ref, turn.turn_id)
                    last = event
            return last.type, child, leader

    last, child, leader = anyio.run(main)
    assert last == "turn.cancelled"
    assert not alive(child) and not alive(leader)
    assert group_members(leader) == []


def test_session_mode_keeps_one_process_and_resume_in_new_controller(tmp_path, workspace):
    async def first():
        async with controller(tmp_path) as c:
            ref = await c.open_session(
                harness="stdio-jsonl",
                workspace=workspace,
                config={"command": REFERENCE, "mode": "session"},
            )
            a = await c.run_turn(ref, "one")
            b = await c.run_turn(ref, "two")
            return ref, a.text, b.text

    ref, a, b = anyio.run(first)
    assert (a, b) == ("one", "two")

    async def second():
        async with controller(tmp_path) as c:
            await c.resume_session(ref, workspace=workspace, config={"command": REFERENCE})
            result = await c.run_turn(ref, "three")
            return result.text, [e.sequence for e in c.events(ref.session_id)]

    text, sequences = anyio.run(second)
    assert text == "three"
    assert sequences == list(range(1, len(sequences) + 1))


def test_deadline_kills_a_hung_program(tmp_path, workspace):
    async def main():
        async with controller(tmp_path, turn_timeout=0.5) as c:
            ref = await c.open_session(
                harness="stdio-jsonl", workspace=workspace, config={"command": REFERENCE}
            )
            return await c.run_turn(ref, "sleep 30")

    result = anyio.run(main)
    assert result.status == "failed" and result.reason == "timeout"


def test_conformance_kit_passes_with_the_reference_program():
    from harness_core.conformance import run_conformance

    report = run_conformance("stdio-jsonl", timeout=30)
    failed = [(c.name, c.detail) for c in report.checks if not c.passed]
    assert report.passed, failed


def test_conformance_checks_the_program_harness_jsonl_command_names(tmp_path, monkeypatch):
    # An author's own program, named as the README says: it is the one checked (the kit
    # passed a broken program, checking the bundled reference instead).
    from harness_core.conformance import run_conformance

    broken = script(tmp_path, "import sys; sys.stdin.readline(); print('not json')")
    monkeypatch.setenv("HARNESS_JSONL_COMMAND", " ".join(broken))
    report = run_conformance("stdio-jsonl", timeout=30)
    assert not report.passed
    assert "turns-completed" in [c.name for c in report.checks if not c.passed]


ASKING_AGENT = """
    import json, sys
    turn = json.loads(sys.stdin.readline())
    def ask(command):
        print(json.dumps({"type": "permission.request", "id": "r-" + command.split()[0],
                          "tool": "Bash", "kind": "shell", "command": command,
                          "input": {"command": command}}), flush=True)
        return json.loads(sys.stdin.readline())
    answers = [ask(c) for c in turn["prompt"].split(";")]
    text = " | ".join(f"{a['id']} {a['behavior']} {a['reason']}" for a in answers)
    print(json.dumps({"type": "turn.completed", "text": text}), flush=True)
"""


@pytest.mark.parametrize("mode", ["per-turn", "session"])
def test_a_program_asks_and_reads_the_answer_on_stdin(tmp_path, workspace, mode):
    from harness_hookspecs import PermissionDecision

    asked = []

    async def handler(request):
        asked.append(request.command)
        return PermissionDecision.deny("not in this test")

    async def main():
        async with controller(tmp_path, permission_handler=handler) as c:
            ref = await c.open_session(
                harness="stdio-jsonl",
                workspace=workspace,
                config={
                    "command": script(tmp_path, ASKING_AGENT),
                    "mode": mode,
                    "permissions": True,
                },
            )
            return await c.run_turn(ref, "pytest -q;cat ~/.ssh/id_rsa;rm -rf /")

    result = anyio.run(main)
    assert result.status == "completed", result
    assert result.text == (
        "r-pytest allow None | r-cat deny not in this test"
        " | r-rm deny recursive or forced delete outside the workspace"
    )
    assert asked == ["cat ~/.ssh/id_rsa"]  # auto: the policy answered the others
    resolved = [e.payload.source for e in result.events if e.type == "permission.resolved"]
    assert resolved == ["policy", "host", "policy"]
    assert "permissions" in StdioJsonlAdapter().describe().features


def test_an_invalid_permission_request_fails_the_turn(tmp_path, workspace):
    body = 'print(\'{"type": "permission.request", "id": 5, "tool": "Bash"}\', flush=True)\n'
    result = anyio.run(one_turn, tmp_path, workspace, script(tmp_path, body), "x")
    assert result.status == "failed"
    assert result.events[-1].payload.reason == "provider-failed"
