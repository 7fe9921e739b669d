"""``harness ledger migrate|check|prune`` (issue 33) on SQLite and PostgreSQL ledgers that the
previous schema's code made (``fixtures/``): the upgrade keeps every event and a session goes
on; prune archives and removes only closed sessions older than the cutoff, the archive imports
back, and every other row stays append-only."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from harness_hookspecs import HarnessError

from .ledger_samples import open_store, url_for

HARNESS = [str(Path(sys.executable).with_name("harness"))]
FIXTURES = Path(__file__).with_name("fixtures")
#: Ledgers of the schema before pruning: (closed session, open session, version, the version
#: they are migrated to).
OLD = {
    "sqlite": (
        "3da436a9-220f-49d3-85f1-0ca409b38d78",
        "a668dc57-3841-44db-9805-22f4bc631892",
        3,
        5,
    ),
    "postgresql": (
        "6d7c3d17-efae-4203-bf6d-704c70d05d44",
        "d7107b02-edc2-462b-bae1-21e8bbaac361",
        1,
        2,
    ),
}
#: After every session of the fixtures, before anything a test makes.
CUTOFF = "2026-12-04T18:10:00Z"


#: The workspace the fixtures' sessions were made in: each test gives them one of its own.
FIXTURE_WORKSPACE = "/tmp/w-ops"


def _old_ledger(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    url = url_for(kind, tmp_path, request)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    if kind == "sqlite":
        shutil.copy(FIXTURES / "ledger-v3.sqlite", tmp_path / "ledger.sqlite")
        with sqlite3.connect(tmp_path / "ledger.sqlite") as connection:
            connection.execute(
                "UPDATE sessions SET record = replace(record, ?, ?)",
                (FIXTURE_WORKSPACE, str(workspace)),
            )
        connection.close()
    else:
        import psycopg

        script = (FIXTURES / "ledger-postgresql-v1.sql").read_text()
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(script.replace(FIXTURE_WORKSPACE, str(workspace)))
    return url


def _harness(env: dict[str, str], *argv: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*HARNESS, *argv], capture_output=True, text=True, env=env)
    assert done.returncode == code, (argv, done.stdout, done.stderr)
    return done


def _lines(done: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in done.stdout.splitlines()]


def _delete_refused(url: str, session_id: str) -> None:
    """A plain DELETE of the session's events fails on the append-only trigger."""
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.removeprefix("sqlite://"))
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            connection.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
        connection.close()
        return
    import psycopg

    with (
        psycopg.connect(url, autocommit=True) as connection,
        pytest.raises(psycopg.Error, match="append-only"),
    ):
        connection.execute("DELETE FROM ledger_events WHERE session_id = %s", (session_id,))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_old_ledger_is_migrated_then_pruned_and_its_archive_imports_back(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    closed, still_open, old_version, new_version = OLD[kind]
    url = _old_ledger(kind, tmp_path, request)
    env = {**os.environ, "HARNESS_LEDGER": url, "HARNESS_STATE_DIR": str(tmp_path / "state")}

    # check names the old version; a dry run prints the upgrade and changes nothing
    found = _lines(_harness(env, "ledger", "check", "--json", code=1))
    assert found[0] == {"check": f"schema version {old_version} (this store: {new_version})",
                        "ok": False}  # fmt: skip
    plan = _harness(env, "ledger", "migrate", "--dry-run", "--json")
    assert [s for s in _lines(plan) if "ledger_pruned" in s["statement"] or "pruned (" in
            s["statement"]]  # fmt: skip
    assert f"version {old_version} -> {new_version}" in plan.stderr
    _harness(env, "ledger", "check", code=1)
    migrated = _harness(env, "ledger", "migrate")
    assert migrated.stdout == f"ledger schema version {old_version} -> {new_version}\n"
    again = _harness(env, "ledger", "migrate", "--json")
    assert _lines(again) == [{"from": new_version, "to": new_version}]
    assert all(line["ok"] for line in _lines(_harness(env, "ledger", "check", "--json")))

    # every event the old code wrote reads back, and the open session goes on
    store = open_store(url)
    try:
        before = {sid: store.events(sid) for sid in (closed, still_open)}
    finally:
        store.close()
    assert {sid: [e.sequence for e in events] for sid, events in before.items()} == {
        closed: list(range(1, 16)),
        still_open: list(range(1, 9)),
    }
    # a dry run lists what would go: the old closed session; the old open one is left
    listed = _lines(_harness(env, "ledger", "prune", "--before", CUTOFF, "--dry-run", "--json"))
    assert sorted((f["session_id"], f["action"], f["events"]) for f in listed) == sorted(
        [(closed, "would prune", 15), (still_open, "open", 8)]
    )
    archive = tmp_path / "archive"
    _harness(env, "ledger", "prune", "--before", CUTOFF, "--dry-run", "--archive", str(archive))
    assert not archive.exists()
    resumed = _lines(_harness(env, "run", "--session", still_open, "after the upgrade", "--json"))
    assert resumed[-1]["type"] == "turn.completed" and resumed[-1]["sequence"] > 8
    fresh = _lines(_harness(env, "run", "echo", "a new session", "--close", "--json"))
    newer = fresh[0]["session_id"]

    pruned = _lines(
        _harness(env, "ledger", "prune", "--before", CUTOFF, "--archive", str(archive), "--json")
    )
    assert sorted((f["session_id"], f["action"], f["events"]) for f in pruned) == sorted(
        [(closed, "pruned", 15), (still_open, "open", resumed[-1]["sequence"])]
    )
    bundle = Path(next(f["archive"] for f in pruned if f["action"] == "pruned"))
    assert bundle.parent == archive and sorted(os.listdir(archive)) == [bundle.name]
    gone = _harness(env, "events", closed, code=2)
    assert "session-not-found" in gone.stderr
    store = open_store(url)
    try:
        assert store.get_session(closed) is None and store.events(closed) == []
        assert store.get_session(newer) is not None and store.get_session(still_open) is not None
    finally:
        store.close()
    for kept in (newer, still_open):  # everything newer, and the open session, stay append-only
        _delete_refused(url, kept)

    # the archive is an ordinary export bundle: it brings the session back as it was
    _harness(env, "import", str(bundle))
    store = open_store(url)
    try:
        assert store.events(closed) == before[closed]
        assert store.get_session(closed).status == "closed"
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_prune_session_refuses_an_open_a_held_and_a_changed_session(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, tmp_path, request)
    env = {**os.environ, "HARNESS_LEDGER": url, "HARNESS_STATE_DIR": str(tmp_path / "state")}
    opened = _lines(_harness(env, "run", "echo", "stays open", "--json"))[0]["session_id"]
    closed = _lines(_harness(env, "run", "echo", "closed", "--close", "--json"))[0]["session_id"]
    holder, pruner = open_store(url), open_store(url)
    try:
        last = pruner.last_sequence(closed)
        with pytest.raises(HarnessError, match="is open") as refused:
            pruner.prune_session(opened, archived_through=pruner.last_sequence(opened))
        assert refused.value.reason == "invalid-request"
        with pytest.raises(HarnessError, match="events past its archive"):
            pruner.prune_session(closed, archived_through=last - 1)
        with pytest.raises(HarnessError) as missing:
            pruner.prune_session("no-such-session", archived_through=0)
        assert missing.value.reason == "session-not-found"
        holder.claim(closed)  # a live writer holds it
        with pytest.raises(HarnessError) as busy:
            pruner.prune_session(closed, archived_through=last)
        assert busy.value.reason == "session-busy"
        holder.release(closed)
        holder.flush()
        assert [e.sequence for e in pruner.events(closed)] == list(range(1, last + 1))
        assert pruner.prune_session(closed, archived_through=last) == last
        assert pruner.events(closed) == [] and pruner.get_session(opened) is not None
    finally:
        holder.close()
        pruner.close()


def test_prune_needs_an_archive_and_a_readable_cutoff(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESS_LEDGER": f"sqlite://{tmp_path}/ledger.sqlite",
           "HARNESS_STATE_DIR": str(tmp_path / "state")}  # fmt: skip
    _harness(env, "run", "echo", "x", "--close")
    for argv, hint in [
        (("--before", "2020-01-01"), "prune needs --archive DIR"),
        (("--before", "last tuesday", "--archive", "a"), "is not a date"),
        (("--older-than", "3 weeks", "--archive", "a"), "is not an age like 30d"),
        ((), "one of --before DATE or --older-than AGE"),
    ]:
        done = _harness(env, "ledger", "prune", *argv, code=2)
        assert done.stderr.count("\n") == 1 and "invalid-request" in done.stderr, done.stderr
        assert hint in done.stderr
    memory = _harness({**env, "HARNESS_LEDGER": "memory:"}, "ledger", "check", code=2)
    assert "has no schema to migrate or check" in memory.stderr
    jsonl = {**env, "HARNESS_LEDGER": f"jsonl://{tmp_path}/jsonl"}
    refused = _harness(jsonl, "ledger", "prune", "--older-than", "1d", "--archive", "a", code=2)
    assert refused.stderr.strip().splitlines() == [
        "harness: error: invalid-request: this ledger cannot be pruned "
        "(SQLite and PostgreSQL ledgers can)"
    ]
