"""Against superqode 2.25 itself, in its own venv (``.venv-superqode``, made by ``./dev test``
as the benchmarks make theirs; ``$HARNESS_SUPERQODE_PYTHON`` names another): a session superqode
made round-trips through ``harness import`` / ``export --format superqode`` and superqode's own
reader; superqode's ``run_harness_conformance`` passes, every check, through
:class:`harness_superqode.HarnessplaneAdapter` for echo, a one-function harness, and Claude Code
and Codex (their real CLIs) against the fake model; superqode discovers the entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SIDE = Path(__file__).with_name("superqode_side.py")
sys.path.insert(0, str(ROOT / "tests" / "cli"))
from cli_run import harness  # noqa: E402

#: every check superqode 2.25's conformance kit runs when resume and checkpoint are claimed
CHECKS = [
    "protocol-version",
    "events-emitted",
    "canonical-envelope",
    "monotonic-sequence",
    "unique-event-ids",
    "lifecycle-boundaries",
    "messages-preserved",
    "durable-ledger",
    "portable-export",
    "resume",
    "checkpoint",
]


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """The ``harness`` CLI on a ledger and state directory of this test's own."""
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_CORE_PLUGINS"}
    env["HARNESS_LEDGER"] = f"sqlite:///{tmp_path}/cli-ledger.sqlite"
    env["HARNESS_STATE_DIR"] = str(tmp_path / "cli-state")
    env["HARNESS_CACHE_DIR"] = str(tmp_path / "cli-cache")
    return env


@pytest.fixture(scope="session")
def superqode_python() -> str:
    python = os.environ.get("HARNESS_SUPERQODE_PYTHON") or str(
        ROOT / ".venv-superqode" / "bin" / "python"
    )
    if not Path(python).exists():
        pytest.skip("superqode 2.25 is not installed (./dev test makes .venv-superqode)")
    probe = subprocess.run(
        [python, "-c", "import superqode.harness.conformance, harness_superqode"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip("the superqode venv lacks superqode or harness_superqode (./dev test)")
    return python


def side(python: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> dict:
    done = subprocess.run(
        [python, str(SIDE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_session_superqode_made_round_trips(superqode_python, cli_env, tmp_path):
    bundle = tmp_path / "superqode.json"
    made = side(superqode_python, "make-session", str(tmp_path / "sq-store"), str(bundle))
    source = json.loads(bundle.read_text())
    assert made["events"] == len(source["events"]) == 16
    imported = harness(cli_env, "import", str(bundle), "--json")
    assert imported.returncode == 0, imported.stderr
    session_id = made["session_id"]
    assert json.loads(imported.stdout)["session_id"] == session_id
    # replayed and listed here
    replay = harness(cli_env, "replay", session_id, "--json")
    replayed = [json.loads(line) for line in replay.stdout.splitlines()]
    assert [e["event_id"] for e in replayed[1:]] == [e["event_id"] for e in source["events"]]
    assert [e["turn_id"] for e in replayed[1:]] == [e["run_id"] for e in source["events"]]
    listed = harness(cli_env, "sessions", "--json").stdout.splitlines()
    assert [json.loads(line)["ref"]["session_id"] for line in listed] == [session_id]
    # exported back, and read by superqode: its run records, its file store, its controller
    back = tmp_path / "back.json"
    out = harness(cli_env, "export", session_id, "--format", "superqode", "-o", str(back))
    assert out.returncode == 0, out.stderr
    read = side(superqode_python, "read-bundle", str(back), str(tmp_path / "sq-store-2"))
    assert read["event_ids"] == [e["event_id"] for e in source["events"]]
    assert read["parents"] == [e["parent_event_id"] for e in source["events"]]
    assert read["reexported_ids"] == read["event_ids"]
    assert [r["run_id"] for r in read["runs"]] == [r["run_id"] for r in source["runs"]]
    assert [r["status"] for r in read["runs"]] == ["succeeded", "failed", "succeeded"]
    assert [r["types"] for r in read["runs"]] == [
        [e["type"] for e in run["events"]] for run in source["runs"]
    ]
    assert read["other_types"] == []
    assert read["checkpoints"] == [c["checkpoint_id"] for c in source["checkpoints"]]
    assert read["session"] == source["session"]


def test_superqode_discovers_the_entry_points(superqode_python):
    found = {h["id"]: h for h in side(superqode_python, "discover")["harnesses"]}
    for name in ("echo", "claude-code", "codex"):
        entry = found[f"harnessplane-{name}"]
        assert entry["available"], entry
        assert entry["protocol_version"] == "1.0"
    echo = found["harnessplane-echo"]["capabilities"]
    assert echo["checkpoint"] and not echo["native_export"]


def _conformance(python: str, tmp_path: Path, item: dict) -> dict:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    options = {"ledger": f"sqlite:///{tmp_path}/ledger.sqlite", "state_dir": str(tmp_path / "st")}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{**item, "workspace": str(workspace), "options": options}]))
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    (report,) = side(python, "conformance", str(spec), env=env)["reports"]
    assert [c["name"] for c in report["checks"]] == CHECKS, report["text"]
    assert report["passed"] and all(c["passed"] for c in report["checks"]), report["text"]
    # the session is ours as well: in our ledger, the turn the kit ran
    from harness_core.ledger import open_ledger

    store = open_ledger(options["ledger"])
    try:
        events = store.events(report["session_id"])
    finally:
        store.close()
    assert [e.type for e in events].count("turn.completed") == 1
    assert "checkpoint.created" in [e.type for e in events]
    return report


@pytest.mark.parametrize("harness_name", ["echo", "function"])
def test_conformance_through_the_adapter(superqode_python, tmp_path, harness_name):
    item = (
        {"harness": "reviewer", "function": True}
        if harness_name == "function"
        else {"harness": "echo"}
    )
    report = _conformance(superqode_python, tmp_path, item)
    assert report["harness_id"] == f"harnessplane-{item['harness']}"


@pytest.mark.cli
@pytest.mark.parametrize("harness_name", ["claude-code", "codex"])
def test_conformance_of_a_real_cli_against_the_fake_model(superqode_python, tmp_path, harness_name):
    from harness_cli_kit.testing import installed_cli

    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    profile = {
        "claude-code": ("claude", "claude-test", "anthropic"),
        "codex": ("codex", "gpt-5", "openai"),
    }[harness_name]
    binary, model, api = profile
    cli = installed_cli(binary)
    steps = [Step(text="protocol-ok", times=None, match=Match(tools=None))]
    with FakeModelServer(steps) as server:
        url = str(server.base_url if api == "anthropic" else server.openai_base_url)
        item = {
            "harness": harness_name,
            "model": model,
            "config": {"cli_path": cli, "base_url": url, "api_key": "sk-superqode-test"},
        }
        report = _conformance(superqode_python, tmp_path, item)
        assert server.model_requests(), "the CLI never reached the fake model"
    assert report["capabilities"]["resume"] and report["capabilities"]["cancel"]


def test_superqode_cancels_a_running_turn_and_steer_is_refused(superqode_python, tmp_path):
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
    (tmp_path / "ws").mkdir()
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    done = side(
        superqode_python, "cancel", str(tmp_path / "ws"), ledger, str(tmp_path / "st"), env=env
    )
    assert done["steer"] == "unsupported"  # echo declares no steer: not claimed
    assert done["seconds"] < 20  # not the 30 s the turn would sleep
    assert done["status"] == ["cancelled"]
    assert done["stored"][-1] == "run.cancelled"
    from harness_core.ledger import open_ledger

    store = open_ledger(ledger)
    try:
        ours = [e.type for e in store.events(done["session_id"])]
    finally:
        store.close()
    assert ours[-1] == "turn.cancelled" and ours.count("turn.started") == 1


@pytest.mark.cli
def test_a_claude_code_session_resumes_in_another_superqode_process(superqode_python, tmp_path):
    from harness_cli_kit.testing import installed_cli

    from harness_core.testing.fake_model import FakeModelServer, Match, Step

    (tmp_path / "ws").mkdir()
    options = {"ledger": f"sqlite:///{tmp_path}/ledger.sqlite", "state_dir": str(tmp_path / "st")}
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    steps = [
        Step(text="Noted the plums.", match=Match(tools=None, contains="plums")),
        Step(text="You said plums.", match=Match(tools=None, contains="what did I say")),
    ]
    with FakeModelServer(steps) as server:
        spec = tmp_path / "spec.json"
        config = {
            "cli_path": installed_cli("claude"),
            "base_url": str(server.base_url),
            "api_key": "sk-superqode-test",
        }
        spec.write_text(
            json.dumps(
                [
                    {
                        "harness": "claude-code",
                        "model": "claude-test",
                        "config": config,
                        "workspace": str(tmp_path / "ws"),
                        "options": options,
                    }
                ]
            )
        )
        store = str(tmp_path / "superqode.sqlite3")
        first = side(superqode_python, "send", str(spec), store, "remember plums", env=env)
        again = side(
            superqode_python,
            "send",
            str(spec),
            store,
            "what did I say?",
            first["session_id"],
            env=env,
        )
        requests = server.model_requests()
    assert first["answer"][-1] == "Noted the plums."
    assert again["session_id"] == first["session_id"]
    assert again["types"][-1] == "run.completed"
    assert again["answer"][-1] == "You said plums."
    # the second process's request carried the first turn: the conversation went on
    assert "Noted the plums." in json.dumps(requests[-1].body)


@pytest.mark.cli
def test_superqode_steers_a_running_claude_code_turn(superqode_python, tmp_path):
    from harness_cli_kit.testing import installed_cli

    from harness_core.ledger import open_ledger
    from harness_core.testing.fake_model import FakeModelServer, Match, Step, ToolCall

    (tmp_path / "ws").mkdir()
    ledger = f"sqlite:///{tmp_path}/ledger.sqlite"
    text = "also mention the colour teal"
    script = [
        Step(text="Looking.", tool_calls=[ToolCall("Bash", {"command": "echo hi"})], delay=3),
        Step(text="Done, teal.", match=Match(tool_result=True)),
    ]
    with FakeModelServer(script) as server:
        spec = tmp_path / "spec.json"
        item = {
            "harness": "claude-code",
            "model": "claude-test",
            "config": {
                "cli_path": installed_cli("claude"),
                "base_url": str(server.base_url),
                "api_key": "sk-superqode-test",
            },
            "workspace": str(tmp_path / "ws"),
            "options": {"ledger": ledger, "state_dir": str(tmp_path / "st")},
        }
        spec.write_text(json.dumps([item]))
        env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}
        go = tmp_path / "go"
        process = subprocess.Popen(
            [superqode_python, str(SIDE), "steer", str(spec), text, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            deadline = time.monotonic() + 60
            while not server.model_requests() and time.monotonic() < deadline:
                time.sleep(0.05)
            go.touch()  # the first request is in: steer now, while its answer waits
            out, err = process.communicate(timeout=120)
        finally:
            process.kill()
        assert process.returncode == 0, err[-4000:]
        done = json.loads(out.splitlines()[-1])
        requests = server.model_requests()
    assert done["types"].count("adapter.turn.steered") == 1, done["types"]
    assert done["types"][-1] == "run.completed"
    assert text not in json.dumps(requests[0].body)
    assert text in json.dumps(requests[-1].body)
    store = open_ledger(ledger)
    try:
        ours = [e.type for e in store.events(done["session_id"])]
    finally:
        store.close()
    assert ours.count("turn.steered") == 1 and ours[-1] == "turn.completed"
