"""``harness run --output-schema FILE``: the parsed answer printed (stdout holds only it), on the
terminal event in ``--json``/``--events``, in the export's turn summary; a bad file or schema is
one clear line before anything is recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness, install_harness

DECIDER = """
from harness_core import harness

@harness("decider")
async def run(message, session):
    calls = session.state["calls"] = session.state.get("calls", 0) + 1
    first = message.content.splitlines()[0]
    if first.startswith("junk first") and calls == 1:
        return "sure, here you go"
    if first.startswith("Your final answer did not match"):
        first = "retried"
    return '{"step": "done", "answer": "' + first + '"}'
"""

SCHEMA = {
    "type": "object",
    "properties": {"step": {"enum": ["actions", "done"]}, "answer": {"type": "string"}},
    "required": ["step"],
}


@pytest.fixture
def env(cli_env, tmp_path):
    site = tmp_path / "site"
    install_harness(site, "decider", DECIDER)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    return {**cli_env, "PYTHONPATH": str(site)}


def run(env, tmp_path, prompt, *extra, schema="schema.json"):
    return harness(
        env,
        "run",
        "decider",
        prompt,
        "--workspace",
        str(tmp_path),
        "--output-schema",
        str(tmp_path / schema),
        *extra,
    )


def test_the_parsed_answer_is_all_stdout_holds(env, tmp_path):
    out = run(env, tmp_path, "hello")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"step": "done", "answer": "hello"}
    assert out.stdout == json.dumps({"step": "done", "answer": "hello"}, indent=2) + "\n"
    assert "completed" in out.stderr


def test_json_and_events_show_it_on_the_terminal_event_and_the_export_keeps_it(env, tmp_path):
    out = run(env, tmp_path, "junk first", "--json")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    terminal = records[-1]
    assert terminal["type"] == "turn.completed"
    assert terminal["payload"]["output"] == {"step": "done", "answer": "retried"}
    # the first answer was not JSON: retried once in the same turn, one terminal
    assert sum(r["type"].startswith("turn.") and r["type"] != "turn.started" for r in records) == 1
    assert any("retrying (1 of 2)" in (r["payload"].get("message") or "") for r in records)
    session_id = terminal["session_id"]

    events = harness(env, "events", session_id)
    assert 'turn.completed        output {"step": "done", "answer": "retried"}' in events.stdout

    plain = harness(env, "run", "decider", "no schema", "--session", session_id, "--json")
    assert plain.returncode == 0, plain.stderr
    bundle = json.loads(harness(env, "export", session_id).stdout)
    first, second = bundle["turns"]
    assert first["output"] == {"step": "done", "answer": "retried"}
    assert "output" not in second  # a turn without a schema has none


def test_retries_run_out_is_invalid_output(env, tmp_path):
    out = run(env, tmp_path, "junk first", "--output-retries", "0")
    assert out.returncode == 1
    assert out.stdout == ""  # no parsed answer to print
    assert "failed: invalid-output" in out.stderr


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (
            '{"type": "objekt"}',
            "the output schema is not a valid JSON Schema: "
            "'objekt' is not valid under any of the given schemas at type",
        ),
        ('{"type": ', "the output schema file is not JSON: Expecting value at line 1 column 10"),
        ("[1, 2]", "the output schema is not a JSON Schema: it must be a JSON object"),
        (  # an export bundle: any object passes the meta-schema, so its keys are checked
            '{"format": "harness-export", "version": 1, "session": {}, "events": []}',
            "the output schema is not a JSON Schema: unknown keywords 'events', 'session', "
            "'version'",
        ),
        (b"\xff\xfe", "the output schema file is not JSON: not UTF-8 text"),
        (
            '{"properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}}',
            (
                "the output schema's references cannot be followed: $ref "
                "'http://127.0.0.1:9/a.json' is another document (only #... references are followed)"
            ),
        ),
        (
            '{"properties": ' * 5000 + "{}" + "}" * 5000,
            ("the output schema file is not JSON: nested too deeply"),
        ),
        (None, "cannot read the output schema file: {path}: No such file or directory"),
    ],
)
def test_a_bad_schema_file_is_one_clear_line_and_nothing_is_recorded(env, tmp_path, content, line):
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    out = run(env, tmp_path, "hello", schema="bad.json")
    assert out.returncode == 2
    expected = "harness: error: invalid-request: " + line.format(path=path)
    assert out.stderr.splitlines() == [expected]
    assert out.stdout == ""
    assert not Path(env["HARNESS_LEDGER"].removeprefix("sqlite:///")).exists()


def test_output_retries_needs_a_schema_and_a_bound(env, tmp_path):
    alone = harness(env, "run", "decider", "hi", "--output-retries", "1")
    assert alone.stderr.splitlines() == [
        "harness: error: invalid-request: --output-retries needs --output-schema"
    ]
    many = run(env, tmp_path, "hi", "--output-retries", "11")
    assert many.stderr.splitlines() == [
        "harness: error: invalid-request: --output-retries must be 0-10"
    ]
