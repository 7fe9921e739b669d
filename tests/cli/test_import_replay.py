"""``harness import`` and ``harness replay``: an export imported into an empty ledger exports
equal; bad bundles (truncated, wrong version, clashing ids, foreign events) are one line with
nothing written; replay prints the session in order with offsets."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import attrs
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_run import harness


@pytest.fixture
def exported(cli_env, tmp_path):
    """A two-turn echo session exported to bundle.json."""
    ws = ("--workspace", str(tmp_path))
    first = harness(cli_env, "run", "echo", "apples", *ws, "--json")
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout.splitlines()[0])["session_id"]
    second = harness(cli_env, "run", "echo", "pears", "--session", session_id, "--close")
    assert second.returncode == 0, second.stderr
    bundle = tmp_path / "bundle.json"
    out = harness(cli_env, "export", session_id, "-o", str(bundle))
    assert out.returncode == 0, out.stderr
    return session_id, bundle


def _without_stamp(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("exported_at")
    return data


def _rows(path: Path, table: str = "events") -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_export_import_round_trips_equal(cli_env, tmp_path, exported):
    session_id, bundle = exported
    other = f"sqlite:///{tmp_path}/other.sqlite"
    out = harness(cli_env, "import", str(bundle), "--ledger", other, "--json")
    assert out.returncode == 0, out.stderr
    count = len(json.loads(bundle.read_text())["events"])
    assert json.loads(out.stdout) == {"session_id": session_id, "harness": "echo", "events": count}
    again = tmp_path / "again.json"
    assert (
        harness(cli_env, "export", session_id, "--ledger", other, "-o", str(again)).returncode == 0
    )
    reexported, original = _without_stamp(again), _without_stamp(bundle)
    # the one difference: the record says it was imported (a fork takes nothing from it)
    assert (original["session"].pop("imported"), reexported["session"].pop("imported")) == (
        False,
        True,
    )
    assert reexported == original
    # the imported session reads like any other
    listed = harness(cli_env, "sessions", "--ledger", other, "--json")
    listed_ids = [json.loads(line)["ref"]["session_id"] for line in listed.stdout.splitlines()]
    assert listed_ids == [session_id]


def test_clashing_ids_are_refused_and_nothing_is_written(cli_env, tmp_path, exported):
    _, bundle = exported
    ledger_file = tmp_path / "cli-ledger.sqlite"
    before = _rows(ledger_file)
    out = harness(cli_env, "import", str(bundle))  # the ledger it came from
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        "harness: error: invalid-request: the ledger already has this session id"
    ]
    assert _rows(ledger_file) == before


def _first(pattern: str, new: str, count: int = 1):
    """A damage: the first ``count`` matches (0: all) of ``pattern`` replaced by ``new``."""
    return lambda text: re.sub(pattern, lambda _match: new, text, count=count)


@pytest.mark.parametrize(
    ("damage", "hint"),
    [
        (lambda text: text[: len(text) // 2], "the bundle is not JSON (truncated?)"),
        (lambda text: text.replace('"version": 1', '"version": 99'), "bundle version 99 is not 1"),
        (lambda text: "[]", "the file is not a harness-core.export bundle"),
        (
            lambda text: text.replace('"sequence": 3', '"sequence": 30'),
            "the bundle's event sequence has a gap",
        ),
        (
            lambda text: text.replace('"type": "turn.started"', '"type": "turn.exploded"', 1),
            "the bundle holds a malformed record",
        ),
        (
            lambda text: text.replace("{", '{"deep": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1),
            "the bundle is not JSON (truncated?)",
        ),
        (
            _first(r'"timestamp": "[^"]*"', '"timestamp": "not a time"'),
            "the bundle holds a malformed event envelope",
        ),
        (
            lambda text: text.replace('"sequence": 3', '"sequence": "3"'),
            "the bundle holds a malformed event envelope",
        ),
        (
            _first(r'"event_id": "[^"]*"', '"event_id": {"a": 1}'),
            "the bundle holds a malformed event envelope",
        ),
        (
            _first(r'"turn_id": "[^"]*"', '"turn_id": "t\\u001b[2J"', count=0),
            "the bundle holds a malformed event envelope",
        ),
    ],
    ids=[
        "truncated",
        "wrong-version",
        "not-a-bundle",
        "sequence-gap",
        "unknown-type",
        "nested-past-recursion",
        "bad-timestamp",
        "sequence-as-text",
        "event-id-an-object",
        "turn-id-with-escape",
    ],
)
def test_bad_bundles_get_one_line_and_write_nothing(cli_env, tmp_path, exported, damage, hint):
    _, bundle = exported
    bad = tmp_path / "bad.json"
    bad.write_text(damage(bundle.read_text()))
    target = tmp_path / "empty.sqlite"
    out = harness(cli_env, "import", str(bad), "--ledger", f"sqlite:///{target}")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert lines == [f"harness: error: invalid-request: {hint}"]
    assert _rows(target) == 0


def test_replay_prints_the_session_in_order(cli_env, exported):
    session_id, _ = exported
    out = harness(cli_env, "replay", session_id)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("    +0.000s ")
    types = [line.split()[2] for line in lines]
    assert types[0] == "session.opened" and types[-1] == "session.closed"
    assert types.count("turn.started") == 2 and types.count("turn.completed") == 2
    offsets = [float(line.split()[0][1:-1]) for line in lines]
    assert offsets == sorted(offsets)
    as_json = harness(cli_env, "replay", session_id, "--json")
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r["sequence"] for r in records] == list(range(1, len(lines) + 1))
    missing = harness(cli_env, "replay", "no-such-session")
    assert missing.returncode != 0 and "session-not-found" in missing.stderr


def _grown(bundle: Path, path: Path, copies: int) -> dict:
    """``bundle`` with its last delta event repeated ``copies`` times before its final events
    (new ids, sequences renumbered): a big, valid bundle."""
    data = json.loads(bundle.read_text())
    events = data["events"]
    delta = max(i for i, e in enumerate(events) if e["type"] == "message.delta")
    extra = [dict(events[delta], event_id=f"evt_grown_{n:07d}") for n in range(copies)]
    events[delta + 1 : delta + 1] = extra
    for sequence, event in enumerate(events, 1):
        event["sequence"] = sequence
    path.write_text(json.dumps(data))
    return data


def _export_of(cli_env, session_id: str, ledger: str, path: Path) -> dict:
    out = harness(cli_env, "export", session_id, "--ledger", ledger, "-o", str(path))
    assert out.returncode == 0, out.stderr
    data = json.loads(path.read_text())
    data.pop("exported_at")
    return data


def _forged(bundle: Path, path: Path) -> dict:
    """``bundle`` with a turn appended (started, delta, completed at the next sequences): an
    extension of the stored session nobody ran (issue 26, item 3)."""
    data = json.loads(bundle.read_text())
    last = data["events"][-1]
    base = {k: last[k] for k in ("protocol_version", "session_id", "harness", "timestamp")}
    forged = [
        ("turn.started", {"prompt": "forged"}),
        ("message.delta", {"text": "forged answer"}),
        ("turn.completed", {"text": "forged answer"}),
    ]
    for index, (kind, payload) in enumerate(forged, 1):
        sequence = last["sequence"] + index
        data["events"].append(
            {**base, "event_id": f"evt_forged_{sequence}", "sequence": sequence,
             "turn_id": "turn_forged", "parent_event_id": None, "type": kind, "payload": payload}
        )  # fmt: skip
    path.write_text(json.dumps(data))
    return data


@pytest.mark.parametrize("scheme", ["sqlite", "jsonl"])
def test_a_forged_continuation_is_refused(cli_env, tmp_path, exported, scheme):
    session_id, bundle = exported
    ledger = f"{scheme}:///{tmp_path}/forged.{scheme}"
    assert harness(cli_env, "import", str(bundle), "--ledger", ledger).returncode == 0
    before = _export_of(cli_env, session_id, ledger, tmp_path / "before.json")
    forged = tmp_path / "forged.json"
    _forged(bundle, forged)
    out = harness(cli_env, "import", str(forged), "--ledger", ledger)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "harness: error: invalid-request: the ledger already has this session id"
    )
    assert _export_of(cli_env, session_id, ledger, tmp_path / "after.json") == before
    # the ledger it was exported from refuses it too
    out = harness(cli_env, "import", str(forged))
    assert out.returncode == 2 and "already has this session id" in out.stderr


def test_a_journalled_import_is_finished_only_by_the_same_bundle(cli_env, tmp_path, exported):
    """A store that cannot import in one transaction (JSONL) journals the bundle's digest: an
    import killed midway is finished by the same bundle, never by another one."""
    import hashlib

    from harness_core.bundle_import import load_bundle_file
    from harness_core.ledger import open_ledger

    session_id, bundle = exported
    loaded = load_bundle_file(str(bundle))
    ledger = f"jsonl:///{tmp_path}/partial.jsonl"
    store = open_ledger(ledger)  # what a killed import leaves: the record and a prefix
    store.create_session(attrs.evolve(loaded.record, imported=True))  # as the import writes it
    store.append(list(loaded.events())[:3])
    store.close()
    journal = Path(cli_env["HARNESS_STATE_DIR"]) / "imports"
    journal.mkdir(parents=True)
    marker = journal / f"{hashlib.sha256(session_id.encode()).hexdigest()[:32]}.json"
    marker.write_text(json.dumps({"session_id": session_id, "digest": loaded.digest}))
    forged = tmp_path / "forged.json"
    _forged(bundle, forged)
    out = harness(cli_env, "import", str(forged), "--ledger", ledger)
    assert out.returncode == 2 and "already has this session id" in out.stderr
    out = harness(cli_env, "import", str(bundle), "--ledger", ledger)
    assert out.returncode == 0, out.stderr
    finished, original = (
        _export_of(cli_env, session_id, ledger, tmp_path / "a.json"),
        _without_stamp(bundle),
    )
    assert finished["session"].pop("imported") and not original["session"].pop("imported")
    assert finished == original
    assert not marker.exists()
    # once complete it is the ledger's session like any other: a further import is refused
    out = harness(cli_env, "import", str(bundle), "--ledger", ledger)
    assert out.stderr.strip() == (
        "harness: error: invalid-request: the ledger already has this session id"
    )


def test_a_stored_prefix_without_a_journal_is_a_clash(cli_env, tmp_path, exported):
    from harness_core.bundle_import import load_bundle_file
    from harness_core.ledger import open_ledger

    _, bundle = exported
    loaded = load_bundle_file(str(bundle))
    other = f"sqlite:///{tmp_path}/clash.sqlite"
    store = open_ledger(other)
    store.create_session(attrs.evolve(loaded.record, imported=True))  # as the import writes it
    store.append(list(loaded.events())[:3])
    store.close()
    out = harness(cli_env, "import", str(bundle), "--ledger", other)
    assert out.returncode != 0
    assert "the ledger already has this session id" in out.stderr


def test_another_sessions_event_ids_leave_no_ghost(cli_env, tmp_path, exported):
    """A fresh session id whose events carry ids another session holds: refused, and nothing
    is written - no session record left behind (issue 26, item 4)."""
    import uuid

    session_id, bundle = exported
    text = bundle.read_text().replace(session_id, str(uuid.uuid4()))
    fresh = tmp_path / "fresh.json"
    fresh.write_text(text)
    ledger_file = tmp_path / "cli-ledger.sqlite"
    before = (_rows(ledger_file, "sessions"), _rows(ledger_file))
    for _ in range(2):
        out = harness(cli_env, "import", str(fresh))
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip() == (
            "harness: error: invalid-request: an event id of the bundle is already in the ledger"
        )
        assert (_rows(ledger_file, "sessions"), _rows(ledger_file)) == before
    listed = harness(cli_env, "sessions", "--json").stdout.splitlines()
    assert len(listed) == 1


def test_import_applies_the_hosts_redaction(cli_env, tmp_path, exported):
    """A value this host knows as a credential is stored redacted (issue 26, item 6)."""
    secret = "plain-credential-value-4711-abcdef"
    session_id, bundle = exported
    data = json.loads(bundle.read_text())
    delta = next(e for e in data["events"] if e["type"] == "message.delta")
    delta["payload"]["text"] = f"the key is {secret} here"
    data["session"]["config"] = {"token": secret}
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(data))
    env = dict(cli_env, ANTHROPIC_API_KEY=secret)
    ledger = f"sqlite:///{tmp_path}/redacted.sqlite"
    out = harness(env, "import", str(leaky), "--ledger", ledger)
    assert out.returncode == 0, out.stderr
    for command in (("events", session_id, "--json"), ("export", session_id)):
        shown = harness(env, *command, "--ledger", ledger)
        assert shown.returncode == 0, shown.stderr
        assert secret not in shown.stdout
        assert "[REDACTED]" in shown.stdout
    for path in tmp_path.glob("redacted.sqlite*"):
        assert secret.encode() not in path.read_bytes()


def test_kill_9_mid_import_leaves_nothing_and_import_again_gives_the_whole_bundle(
    cli_env, tmp_path, exported
):
    """All or nothing: an import killed while its transaction is being written (the WAL
    growing, nothing committed) leaves no session and no event; the next import is whole."""
    import signal
    import subprocess
    import time

    from cli_run import harness_cmd

    session_id, small = exported
    bundle = tmp_path / "big.json"
    expected = _grown(small, bundle, 40_000)
    expected.pop("exported_at")
    ledger = f"sqlite:///{tmp_path}/killed.sqlite"
    path = Path(ledger.split("///", 1)[1])
    wal = path.with_name(path.name + "-wal")
    process = subprocess.Popen(
        [*harness_cmd(), "import", str(bundle), "--ledger", ledger],
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # killed once the import's transaction has written a few MB: never on a timer
    while process.poll() is None and not (wal.exists() and wal.stat().st_size > 2_000_000):
        time.sleep(0.002)
    assert process.poll() is None, "the import ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert (_rows(path, "sessions"), _rows(path)) == (0, 0)
    again = harness(cli_env, "import", str(bundle), "--ledger", ledger, timeout=300)
    assert again.returncode == 0, again.stderr
    exported_again = _export_of(cli_env, session_id, ledger, tmp_path / "again.json")
    assert exported_again["events"] == expected["events"]


def test_seed_001_names_in_a_bundle_are_normalized_and_an_unknown_one_is_refused(
    cli_env, tmp_path, exported
):
    session_id, bundle = exported
    data = json.loads(bundle.read_text())
    for event in data["events"]:  # as a SuperQode-era bundle names them
        if event["type"] == "message.delta":
            event["type"], event["payload"] = "model_delta", {"content": event["payload"]["text"]}
        elif event["type"] == "turn.completed":
            event["type"] = "run.completed"
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(data))
    other = f"sqlite:///{tmp_path}/seed.sqlite"
    out = harness(cli_env, "import", str(seed), "--ledger", other)
    assert out.returncode == 0, out.stderr
    again = tmp_path / "again.json"
    assert (
        harness(cli_env, "export", session_id, "--ledger", other, "-o", str(again)).returncode == 0
    )
    reexported, original = _without_stamp(again), _without_stamp(bundle)
    assert reexported["session"].pop("imported") and not original["session"].pop("imported")
    assert reexported == original  # ours, as exported (the record now says imported)
    # a name in neither vocabulary: one line, nothing written
    data["events"][2]["type"] = "adapter.custom"
    seed.write_text(json.dumps(data))
    fresh = tmp_path / "fresh.sqlite"
    out = harness(cli_env, "import", str(seed), "--ledger", f"sqlite:///{fresh}")
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "invalid-request" in out.stderr
    assert _rows(fresh) == 0


def test_an_imported_session_is_closed_so_its_recorded_command_never_runs(cli_env, tmp_path):
    # A crafted bundle: an open stdio-jsonl session created "in the future" (the newest, so
    # `harness run -c` would pick it) whose config runs a command of the bundle's author.
    ran = tmp_path / "ran"
    command = ["sh", "-c", f'touch {ran}; echo \'{{"type": "turn.completed"}}\'']
    opened = harness(cli_env, "run", "echo", "hello", "--workspace", str(tmp_path), "--json")
    session_id = json.loads(opened.stdout.splitlines()[0])["session_id"]
    bundle = tmp_path / "open.json"
    assert harness(cli_env, "export", session_id, "-o", str(bundle)).returncode == 0
    data = json.loads(bundle.read_text())
    assert data["session"]["status"] == "open"
    data["session"].update(created_at="2099-01-01T00:00:00Z", config={"command": command})
    data["session"]["ref"]["provider"] = "stdio-jsonl"
    for event in data["events"]:
        event["harness"] = "stdio-jsonl"
    data["events"][0]["payload"]["provider"] = "stdio-jsonl"
    bundle.write_text(json.dumps(data))
    other = f"sqlite:///{tmp_path}/other.sqlite"
    assert harness(cli_env, "run", "echo", "mine", "--ledger", other).returncode == 0
    imported = harness(cli_env, "import", str(bundle), "--ledger", other)
    assert imported.returncode == 0, imported.stderr
    listed = harness(cli_env, "sessions", "--ledger", other, "--json").stdout.splitlines()
    states = {json.loads(line)["ref"]["session_id"]: json.loads(line)["status"] for line in listed}
    assert states[session_id] == "closed"
    resumed = harness(cli_env, "run", "--session", session_id, "go on", "--ledger", other)
    assert resumed.returncode == 2 and "session-closed" in resumed.stderr
    continued = harness(cli_env, "run", "-c", "go on", "--ledger", other)
    assert continued.returncode == 0, continued.stderr  # the host's own open session
    assert not ran.exists()


def test_fork_with_a_workspace_that_is_not_there_is_one_line_naming_it(cli_env, tmp_path):
    opened = harness(cli_env, "run", "echo", "hello", "--workspace", str(tmp_path), "--json")
    session_id = json.loads(opened.stdout.splitlines()[0])["session_id"]
    before = harness(cli_env, "events", session_id, "--json").stdout
    missing = tmp_path / "not-here"
    out = harness(cli_env, "fork", session_id, "--workspace", str(missing))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"harness: error: invalid-request: the workspace {missing} does not exist"
    ]
    assert harness(cli_env, "events", session_id, "--json").stdout == before
    listed = harness(cli_env, "sessions", "--json").stdout.splitlines()
    assert len(listed) == 1  # no child opened


class _Endless:
    """A pipe that never ends: ``head`` once, then ``body`` forever; counts what was read."""

    def __init__(self, head: bytes, body: bytes):
        self.head, self.body, self.read_bytes = head, body, 0

    def read(self, size: int = -1) -> bytes:
        assert self.read_bytes < 100 * 1024 * 1024, "read on and on (the pipe has no end)"
        data = self.head or self.body * max(1, size // len(self.body))
        self.head = b""
        self.read_bytes += len(data)
        return data


@pytest.mark.parametrize(
    ("head", "body", "hint", "most"),
    [
        (b"", b"y\n", "the file is not a harness-core.export bundle", 2),
        (b'{"format": "harness-core.export", "x": "', b"a", "the bundle is not JSON", 66),
        (b'{"format": "harness-core.export", "events": [', b"{}, ", "malformed record", 2),
        (b'{"protocol_version": 1, "x": "', b"a", "the SuperQode bundle is over 1 MiB", 3),
    ],
    ids=["not-json", "a-value-past-the-cap", "bad-events", "superqode-past-its-cap"],
)
def test_stdin_is_copied_only_until_a_file_would_be_refused(
    tmp_path, monkeypatch, head, body, hint, most
):
    # `yes | harness import -` wrote gigabytes to the temporary directory before any check
    from harness_hookspecs import HarnessError

    from harness_core import superqode_bundle
    from harness_core.bundle_import import load_any_bundle, spool

    monkeypatch.setattr(superqode_bundle, "FILE_MAX", 1024 * 1024)
    stream = _Endless(head, body)
    path = spool(stream, str(tmp_path))  # type: ignore[arg-type]
    assert stream.read_bytes <= most * 1024 * 1024
    assert Path(path).stat().st_size <= most * 1024 * 1024
    with pytest.raises(HarnessError) as refused:
        load_any_bundle(path)
    assert hint in refused.value.hint


@pytest.mark.parametrize("wrong", ["y\n" * 3_000_000, '{"format": "x", "a": 1}\n  x'])
def test_import_from_stdin_is_refused_as_the_file_is(cli_env, tmp_path, wrong):
    as_file = tmp_path / "wrong.json"
    as_file.write_text(wrong)
    target = f"sqlite:///{tmp_path}/empty.sqlite"
    from_file = harness(cli_env, "import", str(as_file), "--ledger", target)
    from_stdin = harness(cli_env, "import", "-", "--ledger", target, stdin=wrong)
    assert from_file.returncode == from_stdin.returncode == 2
    assert from_stdin.stderr == from_file.stderr
    assert len(from_stdin.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "empty.sqlite").exists() or _rows(tmp_path / "empty.sqlite") == 0


def test_a_good_bundle_from_stdin_imports_whole(cli_env, tmp_path, exported):
    session_id, bundle = exported
    other = f"sqlite:///{tmp_path}/other.sqlite"
    out = harness(cli_env, "import", "-", "--ledger", other, "--json", stdin=bundle.read_text())
    assert out.returncode == 0, out.stderr
    count = len(json.loads(bundle.read_text())["events"])
    assert json.loads(out.stdout) == {"session_id": session_id, "harness": "echo", "events": count}
