"""The canary: a secret injected as a credential must appear nowhere downstream.

Two harnesses get the canary only through credential injection (never from the test directly):

- ``Leaky``, a class adapter, spawns a real subprocess through ``context.spawn`` that prints the
  injected variable (stdout and stderr), then leaks what it read in every field it controls:
  message text, deltas, tool names/summaries/call ids, permission ids/summaries, status, artifact
  name/path/media type, an unknown provider field, error hints, a raised exception's text, a
  terminal's hint, the completed text, and the prompt echoed back (the host's prompt carries the
  canary too);
- ``leaky_fn``, a one-function harness, leaks it through ``session.env`` as chunks, payloads, a
  ``Result`` and a raised exception.

Then the canary must be absent from: streamed events, on_event observers, the SQLite ledger
file bytes (the ``.sqlite``, ``-wal`` and ``-shm`` files, while open and after close), the export
JSON (library and CLI), ``harness events`` (text and ``--json``), and every file under the test's
temporary directory. And ``[REDACTED]`` must be present in each leaking field, so the events were
really written rather than dropped.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import anyio
import attrs
import pytest
from harness_hookspecs import (
    Artifact,
    Credential,
    HarnessDescriptor,
    HarnessError,
    MessageCompleted,
    MessageDelta,
    PermissionRequested,
    PermissionResolved,
    SessionRef,
    Status,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
    Usage,
    UsageReported,
    hookimpl,
)
from harness_hookspecs.events import make_payload

from harness_core import Controller, Result, harness, plugins_from

ROOT = Path(__file__).resolve().parents[2]
CANARY = "CANARY-" + secrets.token_hex(12)
VAR = "HARNESS_CANARY"
AGENT = "canary-agent"
REDACTED = "[REDACTED]"

#: What the subprocess really printed (proves the canary reached the harness process).
RAW: list[str] = []


class Leaky:
    """A class adapter that leaks its injected secret everywhere it can."""

    name = "leaky"

    def describe(self) -> HarnessDescriptor:
        return HarnessDescriptor(
            provider=self.name, targets={"local"}, features={"resume", "cancel"}, vendor="canary"
        )

    async def open_session(self, request, context):
        return SessionRef(provider=self.name, target="local", session_id=context.session_id)

    async def resume_session(self, request, context):
        return request.session

    async def _read_secret(self, context) -> str:
        script = f'printf "%s\\n" "${VAR}"; printf "stderr %s\\n" "${VAR}" >&2'
        process = await context.spawn(["sh", "-c", script])
        lines = [line.decode() async for line in process.lines()]
        await process.wait()
        RAW.extend(lines)
        RAW.append(process.stderr_tail().decode())
        return lines[0]

    async def run_turn(self, request, context):
        secret = await self._read_secret(context)
        mode = request.prompt.split()[0]
        if mode == "stream":
            yield MessageDelta(text=f"delta {secret}")
            yield MessageDelta(text=secret)
            yield MessageCompleted(text=f"full {secret}; you said: {request.prompt}")
            yield ToolStarted(call_id=secret, name=secret, summary=f"running {secret}")
            yield ToolCompleted(
                call_id=f"id-{secret}", name=f"t-{secret}", ok=False, summary=secret
            )
            yield PermissionRequested(request_id=secret, summary=f"allow {secret}?", tool=secret)
            yield PermissionResolved(request_id=secret, decision="deny")
            yield Status(message=f"status {secret}")
            yield Artifact(
                name=secret, path=f"/tmp/{secret}/out.txt", media_type=f"text/{secret}", size=1
            )
            yield UsageReported(usage=Usage(input_tokens=1, output_tokens=2, cost_usd=0.5))
            yield make_payload("status", {"message": "projected", "raw": secret, "x": [secret]})
            yield TurnCompleted(text=f"done {secret}")
        elif mode == "hint":
            raise HarnessError("provider-failed", f"failed with {secret}")
        elif mode == "raise":
            yield Status(message="about to explode")
            raise RuntimeError(f"exploded with {secret}")
        elif mode == "value":
            raise ValueError(secret)
        elif mode == "terminal":
            yield TurnFailed(reason="authentication-required", hint=f"bad key {secret}")
        else:
            yield TurnCompleted(text=request.prompt)

    async def cancel_turn(self, request, context):
        return None

    async def close_session(self, request, context):
        return None


@harness("leaky-fn", vendor="canary")
async def leaky_fn(message, session):
    secret = session.env[VAR]
    if message.content.startswith("raise"):
        raise RuntimeError(f"function exploded with {secret}")
    if message.content.startswith("result"):
        return Result(text=f"result {secret}", usage=Usage(input_tokens=3))
    return _chunks(secret, message.content)


async def _chunks(secret, prompt):
    yield f"chunk {secret} "
    yield Status(message=f"fn status {secret}")
    yield f"echo {prompt}"


class CanaryResolver:
    name = "canary"

    async def resolve(self, request):
        return [Credential(env_var=VAR, value=CANARY, agent=AGENT, source="test")]


class Plugin:
    def __init__(self) -> None:
        self.observed: list = []

    @hookimpl
    def register_credential_resolvers(self, register):
        register(CanaryResolver())

    @hookimpl
    def on_event(self, event):
        self.observed.append(event)


def _event_text(event) -> str:
    from harness_core.serialize import event_to_dict

    return json.dumps(event_to_dict(event)) + repr(event) + repr(attrs.asdict(event.payload))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != VAR}
    env["HARNESS_CORE_PLUGINS"] = ""
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "harness_core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def _ledger_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + "*"))


def _assert_absent(data: bytes, where: str) -> None:
    assert CANARY.encode() not in data, f"canary found in {where}"
    # also not in a UTF-16/escaped form a store might use
    assert CANARY.encode("utf-16-le") not in data, f"canary (utf-16) found in {where}"


@pytest.fixture
def run_everything(tmp_path):
    ledger_path = tmp_path / "ledger.sqlite"
    url = f"sqlite:///{ledger_path}"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    plugin = Plugin()
    controller = Controller(
        plugins=plugins_from([Leaky(), leaky_fn, plugin]),
        ledger=url,
        state_dir=tmp_path / "state",
    )
    RAW.clear()
    streamed: list = []
    sessions: list[str] = []
    results: dict[str, object] = {}
    open_bytes: dict[str, bytes] = {}

    async def main():
        async with controller:
            for name in ("leaky", "leaky-fn"):
                ref = await controller.open_session(
                    harness=name, workspace=str(workspace), agent=AGENT
                )
                sessions.append(ref.session_id)
                prompts = (
                    ("stream", "hint", "raise", "value", "terminal", f"echo {CANARY}")
                    if name == "leaky"
                    else ("stream", "result", "raise")
                )
                for prompt in prompts:
                    text = f"{prompt} please repeat {CANARY}"
                    result = await controller.run_turn(ref, text, on_event=streamed.append)
                    results[f"{name}:{prompt}"] = result
            controller.ledger.flush()
            snapshots = tmp_path / "open-snapshots"  # kept for an external grep too
            snapshots.mkdir()
            for file in _ledger_files(ledger_path):
                open_bytes[file.name] = file.read_bytes()
                (snapshots / file.name).write_bytes(open_bytes[file.name])
            bundles = [controller.export(sid) for sid in sessions]
            for sid in sessions[:1]:
                await controller.close_session(sid)
            return bundles

    bundles = anyio.run(main)
    return {
        "tmp_path": tmp_path,
        "ledger_path": ledger_path,
        "url": url,
        "sessions": sessions,
        "streamed": streamed,
        "observed": plugin.observed,
        "results": results,
        "open_bytes": open_bytes,
        "bundles": bundles,
    }


def test_the_canary_reached_the_harness_process(run_everything):
    assert any(CANARY in line for line in RAW)
    assert any(f"stderr {CANARY}" in line for line in RAW)


def test_the_canary_is_not_in_streamed_or_observed_events(run_everything):
    streamed, observed = run_everything["streamed"], run_everything["observed"]
    assert len(streamed) > 30
    assert len(observed) >= len(streamed)
    for event in [*streamed, *observed]:
        assert CANARY not in _event_text(event), event.type
    for result in run_everything["results"].values():
        assert CANARY not in repr(result) and CANARY not in (result.text or "")


def test_every_leaking_field_was_redacted_not_dropped(run_everything):
    by_type: dict[str, list] = {}
    for event in run_everything["streamed"]:
        by_type.setdefault(event.type, []).append(event.payload)
    first = {t: payloads[0] for t, payloads in by_type.items()}
    assert first["turn.started"].prompt == f"stream please repeat {REDACTED}"
    assert by_type["message.delta"][0].text == f"delta {REDACTED}"
    assert by_type["message.delta"][1].text == REDACTED
    assert first["message.completed"].text == (
        f"full {REDACTED}; you said: stream please repeat {REDACTED}"
    )
    tool = first["tool.started"]
    assert (tool.call_id, tool.name, tool.summary) == (REDACTED, REDACTED, f"running {REDACTED}")
    done = first["tool.completed"]
    assert (done.call_id, done.name, done.summary) == (
        f"id-{REDACTED}",
        f"t-{REDACTED}",
        REDACTED,
    )
    asked = first["permission.requested"]
    assert (asked.request_id, asked.summary, asked.tool) == (
        REDACTED,
        f"allow {REDACTED}?",
        REDACTED,
    )
    assert first["permission.resolved"].request_id == REDACTED
    assert by_type["status"][0].message == f"status {REDACTED}"
    artifact = first["artifact"]
    assert (artifact.name, artifact.path, artifact.media_type) == (
        REDACTED,
        f"/tmp/{REDACTED}/out.txt",
        f"text/{REDACTED}",
    )
    assert first["usage"].usage.input_tokens == 1
    completed = [p for p in by_type["turn.completed"] if p.text]
    assert f"done {REDACTED}" in [p.text for p in completed]
    assert f"echo {REDACTED} please repeat {REDACTED}" in [p.text for p in completed]
    failed = {(p.reason, p.hint) for p in by_type["turn.failed"]}
    assert ("provider-failed", f"failed with {REDACTED}") in failed  # adapter-authored hint
    assert ("provider-failed", None) in failed  # raised exception: no text crosses
    # raised ValueError(secret): the harness's failure, not a bad request; no text crosses
    assert ("provider-failed", "the harness raised ValueError") in failed
    assert ("authentication-required", f"bad key {REDACTED}") in failed
    # the function harness
    assert f"chunk {REDACTED} " in [p.text for p in by_type["message.delta"]]
    assert f"fn status {REDACTED}" in [p.message for p in by_type["status"]]
    assert any(p.text == f"result {REDACTED}" for p in by_type["message.completed"])


def test_the_canary_is_not_in_the_sqlite_ledger_files(run_everything):
    ledger_path = run_everything["ledger_path"]
    open_bytes = run_everything["open_bytes"]
    assert "ledger.sqlite" in open_bytes
    assert "ledger.sqlite-wal" in open_bytes  # WAL mode: recent events live here while open
    for name, data in open_bytes.items():
        _assert_absent(data, f"{name} (while open)")
    assert any(REDACTED.encode() in data for data in open_bytes.values())
    files = _ledger_files(ledger_path)
    assert files
    for file in files:
        _assert_absent(file.read_bytes(), f"{file.name} (after close)")
    # grep(1) agrees (the command in the report)
    grep = subprocess.run(
        ["grep", "-a", "-c", "-F", CANARY, *map(str, files)], capture_output=True, text=True
    )
    assert grep.returncode == 1, grep.stdout  # 1 = no match anywhere


def test_the_canary_is_not_in_the_export(run_everything):
    for bundle in run_everything["bundles"]:
        text = json.dumps(bundle, ensure_ascii=False)
        assert CANARY not in text
        assert REDACTED in text
    out = run_everything["tmp_path"] / "export.json"  # left in place for an external grep
    for session in run_everything["sessions"]:
        done = _cli("export", session, "--ledger", run_everything["url"], "-o", str(out))
        assert done.returncode == 0, done.stderr
        assert CANARY not in out.read_text() and CANARY not in done.stderr
        assert REDACTED in out.read_text()
        stdout = _cli("export", session, "--ledger", run_everything["url"])
        assert stdout.returncode == 0 and CANARY not in stdout.stdout + stdout.stderr


def test_the_canary_is_not_in_harness_events_output(run_everything):
    for session in run_everything["sessions"]:
        for extra in ((), ("--json",)):
            done = _cli("events", session, "--ledger", run_everything["url"], *extra)
            assert done.returncode == 0, done.stderr
            assert done.stdout.count("\n") > 5
            assert CANARY not in done.stdout + done.stderr
            assert REDACTED in done.stdout


def test_the_canary_is_in_no_file_under_the_test_directory(run_everything):
    checked = 0
    for path in run_everything["tmp_path"].rglob("*"):
        if path.is_file() and not path.is_symlink():
            _assert_absent(path.read_bytes(), str(path))
            checked += 1
    assert checked >= 2  # the ledger file and the open-time snapshots at least


def test_key_shapes_are_redacted_without_being_registered(tmp_path):
    shapes = [
        "sk-ant-api03-" + "a" * 40,
        "sk-proj-" + "B" * 32,
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "ghp_" + "c" * 36,
        "github_pat_" + "d" * 40,
        "Bearer " + "e" * 24,
    ]

    @harness("shapes")
    async def shapes_fn(message, session):
        for shape in shapes:
            yield Status(message=f"key {shape}")
            yield f"text {shape} "

    async def main():
        async with Controller(
            plugins=plugins_from([shapes_fn]),
            ledger=f"sqlite:///{tmp_path}/l.sqlite",
            state_dir=tmp_path / "state",
        ) as c:
            ref = await c.open_session(harness="shapes", workspace=str(tmp_path))
            return await c.run_turn(ref, "go")

    result = anyio.run(main)
    text = " ".join(_event_text(e) for e in result.events)
    for shape in shapes:
        assert shape not in text
    for file in _ledger_files(tmp_path / "l.sqlite"):
        data = file.read_bytes()
        for shape in shapes:
            assert shape.encode() not in data


def test_a_secret_split_across_deltas(tmp_path):
    """The controller holds back a delta's tail that could start a secret, so it is whole."""

    @harness("splitter")
    async def splitter(message, session):
        secret = session.env[VAR]
        yield secret[:12]
        yield secret[12:]

    async def main():
        async with Controller(
            plugins=plugins_from([splitter, Plugin()]),
            ledger=f"sqlite:///{tmp_path}/l.sqlite",
            state_dir=tmp_path / "state",
        ) as c:
            ref = await c.open_session(harness="splitter", workspace=str(tmp_path), agent=AGENT)
            return await c.run_turn(ref, "go")

    result = anyio.run(main)
    assert CANARY not in result.events[-1].payload.text  # the completed text is redacted...
    joined = "".join(e.payload.text for e in result.events if e.type == "message.delta")
    assert CANARY not in joined  # ...and so are the deltas, joined
    assert "[REDACTED]" in joined
