"""``harness run --instructions FILE`` / ``--no-record-thinking``: the instructions reach a
harness without a native mechanism before its first prompt and are recorded in
``session.opened``; a bad file is one clear line before anything is recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness_hookspecs.models import INSTRUCTIONS_MAX

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

PARROT = """
from harness_core import harness
from harness_hookspecs import ThinkingCompleted

@harness("parrot")
async def run(message, session):
    yield ThinkingCompleted(text="private reasoning 31")
    yield "asked: " + message.content.replace("\\n", " | ")
"""


@pytest.fixture
def env(cli_env, tmp_path):
    site = tmp_path / "site"
    install_harness(site, "parrot", PARROT)
    return {**cli_env, "PYTHONPATH": str(site)}


def run(env, tmp_path, *extra):
    return harness(env, "run", "parrot", "the question", "--workspace", str(tmp_path), *extra)


def events(env):
    [line] = harness(env, "sessions", "--json").stdout.splitlines()
    listed = harness(env, "events", json.loads(line)["ref"]["session_id"], "--json")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def test_instructions_go_before_the_first_prompt_and_into_session_opened(env, tmp_path):
    (tmp_path / "rules.md").write_text("Be brief.\nNever guess.\n")
    out = run(env, tmp_path, "--instructions", str(tmp_path / "rules.md"))
    assert out.returncode == 0, out.stderr
    assert "asked: Be brief. | Never guess. |  | the question" in out.stdout
    recorded = events(env)
    assert recorded[0]["type"] == "session.opened"
    assert recorded[0]["payload"]["instructions"] == "Be brief.\nNever guess."
    started = next(e for e in recorded if e["type"] == "turn.started")
    assert started["payload"]["prompt"] == "the question"  # the host's prompt, as asked


def test_no_record_thinking_keeps_only_the_count(env, tmp_path):
    out = run(env, tmp_path, "--no-record-thinking")
    assert out.returncode == 0, out.stderr
    thinking = [e for e in events(env) if e["type"].startswith("thinking.")]
    assert [e["payload"] for e in thinking] == [{"text": None, "characters": 20}]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read the instructions file"),
        ("", "the instructions file is empty"),
        ("x" * (INSTRUCTIONS_MAX + 1), "the instructions are too long"),
        ("bell \x07", "the instructions file is not text"),
    ],
    ids=["missing", "empty", "too-long", "control"],
)
def test_a_bad_instructions_file_is_one_line_and_records_nothing(env, tmp_path, content, says):
    path = tmp_path / "rules.md"
    if content is not None:
        path.write_text(content)
    out = run(env, tmp_path, "--instructions", str(path))
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid-request" in lines[0] and says in lines[0], out.stderr
    assert harness(env, "sessions", "--json").stdout.strip() in ("", "[]")


def test_instructions_with_a_resumed_session_are_refused(env, tmp_path):
    (tmp_path / "rules.md").write_text("Be brief.")
    assert run(env, tmp_path).returncode == 0
    before = events(env)
    session_id = before[0]["session_id"]
    out = harness(
        env, "run", "--session", session_id, "hi", "--instructions", str(tmp_path / "rules.md")
    )
    assert out.returncode != 0 and "applies to a new session" in out.stderr
    assert events(env) == before
