"""Workspace checkpoints around real Claude Code turns (driven by the fake model): the files a
turn wrote are listed by ``harness diff``, and a rewind restores the tree byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall


def tree_hash(root: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0].startswith(".claude"):
            continue
        digest.update(f"{relative.as_posix()}\0{os.lstat(path).st_mode:o}\0".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _writes(workspace: str, *files: tuple[str, str]) -> list[Step]:
    calls = [ToolCall("Write", {"file_path": f"{workspace}/{n}", "content": c}) for n, c in files]
    return [
        Step(text="Writing.", tool_calls=calls),
        Step(text="Written.", match=Match(tool_result=True)),
    ]


@pytest.mark.cli
def test_harness_diff_shows_the_two_files_a_turn_wrote(cli: Any, tmp_path: Path) -> None:
    script = _writes(cli.workspace, ("notes.md", "# notes\nline two\n"), ("app.py", "print(1)\n"))

    async def main() -> Any:
        async with cli.controller(turn_timeout=90, checkpoints=True) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=cli.config(cli.url(server)),
            )
            return await controller.run_turn(ref, "write two files")

    with FakeModelServer(script) as server:
        result = anyio.run(main)
    assert result.ok, result.reason
    env = {**os.environ, "HARNESS_STATE_DIR": str(tmp_path / "state")}
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
    command = [sys.executable, "-m", "harness_core.cli", "diff", result.session.session_id]
    shown = subprocess.run(
        [*command, "--ledger", ledger], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "2 files changed" in shown
    assert "+1 -0  app.py" in shown and "+2 -0  notes.md" in shown
    assert "+print(1)" in shown and "+# notes" in shown
    data = json.loads(
        subprocess.run(
            [*command, "--ledger", ledger, "--json", "--stat"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert {f["path"] for f in data["files"]} == {"app.py", "notes.md"}


@pytest.mark.cli
def test_rewind_after_three_turns_restores_the_tree(cli: Any) -> None:
    script = [
        *_writes(cli.workspace, ("one.txt", "1\n")),
        *_writes(cli.workspace, ("two.txt", "2\n")),
        *_writes(cli.workspace, ("one.txt", "changed\n")),
    ]
    hashes: list[str] = []

    async def main() -> Any:
        async with cli.controller(turn_timeout=90, checkpoints=True) as controller:
            ref = await controller.open_session(
                harness=cli.harness,
                workspace=cli.workspace,
                model=cli.model,
                config=cli.config(cli.url(server)),
            )
            results = []
            for prompt in ("first", "second", "third"):
                hashes.append(tree_hash(cli.workspace))
                results.append(await controller.run_turn(ref, prompt))
            before = controller.events(ref.session_id)
            starts = [
                e.payload.checkpoint_id
                for e in before
                if e.type == "checkpoint.created" and e.payload.reason == "turn-start"
            ]
            rewound = await controller.rewind(ref, starts[1])  # turn 2's start: after turn 1
            return results, rewound, before, controller.events(ref.session_id)

    with FakeModelServer(script) as server:
        results, rewound, before, after = anyio.run(main)
    assert all(r.ok for r in results), [r.reason for r in results]
    assert tree_hash(cli.workspace) == hashes[1]
    assert Path(cli.workspace, "one.txt").read_text() == "1\n"
    assert not Path(cli.workspace, "two.txt").exists()
    assert rewound.conversation and rewound.turns_kept == 1  # (test_fork_rewind: the model)
    assert after[: len(before)] == before and after[-1].type == "session.rewound"
