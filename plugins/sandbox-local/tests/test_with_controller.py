"""The ``local`` provider through the core: entry-point module, workspaces, outcomes, queueing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxSpec
from sandbox_local import LocalSandboxProvider, plugin

from harness_core import Controller, harness, plugins_from
from harness_core.testing.waiting import wait_until


@harness("scribe")
async def scribe(message, session):
    """Writes the prompt to a file in its workspace; ``fail`` raises; ``list`` lists files."""
    workspace = Path(session.workspace)
    if message.content == "fail":
        raise RuntimeError("boom")
    if message.content == "list":
        return " ".join(sorted(p.name for p in workspace.iterdir())) or "(empty)"
    name, _, text = message.content.partition(" ")
    (workspace / name).write_text(text)
    return f"wrote {name} in {workspace}"


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "workspaces"
    monkeypatch.setenv("HARNESS_WORKSPACES", str(path))
    return path


def make_controller(tmp_path) -> Controller:
    return Controller(
        plugins=plugins_from([scribe, plugin]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )


def test_the_entry_point_module_registers_the_local_provider():
    plugins = plugins_from([plugin])
    assert plugins.broken == []
    assert isinstance(plugins.sandbox_providers["local"], LocalSandboxProvider)


def test_agent_user_workspace_persists_across_sessions_and_records_the_outcome(tmp_path, root):
    spec = SandboxSpec(provider="local", scope="agent-user")
    host_dir = tmp_path / "host"
    host_dir.mkdir()

    async def main():
        async with make_controller(tmp_path) as controller:

            async def open_as(user: str):
                return await controller.open_session(
                    harness="scribe",
                    workspace=str(host_dir),
                    agent="reviewer",
                    user=user,
                    sandbox=spec,
                )

            ref = await open_as("alice")
            wrote = await controller.run_turn(ref, "notes.md remember this")
            failed = await controller.run_turn(ref, "fail")
            await controller.close_session(ref)
            again = await open_as("alice")
            listed = await controller.run_turn(again, "list")
            other = await open_as("bob")
            bobs = await controller.run_turn(other, "list")
            opened = controller.events(ref.session_id)[0]
            return wrote, failed, listed, bobs, opened

    wrote, failed, listed, bobs, opened = anyio.run(main)
    workspace = root.resolve() / "agent-user" / "reviewer" / "alice"
    assert wrote.ok and str(workspace) in wrote.text
    assert (workspace / "notes.md").read_text() == "remember this"
    assert not (host_dir / "notes.md").exists()  # the harness worked in the sandbox workspace
    assert failed.status == "failed"
    assert listed.text == "notes.md"
    assert bobs.text == "(empty)"
    assert opened.type == "session.opened" and opened.payload.sandbox == "local"
    # the last session on alice's workspace ended well (the controller finalized it on exit)
    record = LocalSandboxProvider(root).last_outcome("agent-user", "reviewer", "alice")
    assert record["outcome"] == "success"
    provider = LocalSandboxProvider(root)
    assert provider.last_outcome("agent-user", "reviewer", "bob")["outcome"] == "success"


def test_finalize_gets_the_session_outcome(tmp_path, root):
    spec = SandboxSpec(provider="local", scope="agent")

    async def main():
        async with make_controller(tmp_path) as controller:
            ref = await controller.open_session(
                harness="scribe", workspace=str(tmp_path), agent="a", sandbox=spec
            )
            await controller.run_turn(ref, "fail")
            await controller.close_session(ref)
            after_fail = LocalSandboxProvider(root).last_outcome("agent", "a", None)
            ref = await controller.open_session(
                harness="scribe", workspace=str(tmp_path), agent="a", sandbox=spec
            )
            await controller.run_turn(ref, "x.txt ok")
            await controller.close_session(ref)
            return after_fail, LocalSandboxProvider(root).last_outcome("agent", "a", None)

    after_fail, after_ok = anyio.run(main)
    assert after_fail["outcome"] == "failure"
    assert after_ok["outcome"] == "success"


def test_run_scope_is_removed_when_the_session_closes(tmp_path, root):
    async def main():
        async with make_controller(tmp_path) as controller:
            ref = await controller.open_session(
                harness="scribe", workspace=str(tmp_path), sandbox=SandboxSpec(provider="local")
            )
            result = await controller.run_turn(ref, "a.txt hello")
            path = Path(result.text.split(" in ", 1)[1])
            assert path.is_dir() and path.parent == root.resolve() / "run"
            await controller.close_session(ref)
            return path

    path = anyio.run(main)
    assert not path.exists()


def test_a_second_session_queues_behind_the_first(tmp_path, root, lock_descriptors):
    spec = SandboxSpec(provider="local", scope="agent")
    order: list[str] = []

    async def main():
        async with make_controller(tmp_path) as controller:
            first = await controller.open_session(
                harness="scribe", workspace=str(tmp_path), agent="a", sandbox=spec
            )
            order.append("first-open")

            async def second():
                ref = await controller.open_session(
                    harness="scribe", workspace=str(tmp_path), agent="a", sandbox=spec
                )
                order.append("second-open")
                await controller.close_session(ref)

            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                # the second session has found the workspace's lock held and waits for it
                await wait_until(lambda: lock_descriptors(root) == 2, what="the second open")
                assert order == ["first-open"]
                order.append("first-close")
                await controller.close_session(first)

    anyio.run(main)
    assert order == ["first-open", "first-close", "second-open"]


def test_fail_policy_and_bad_keys_are_clean_errors(tmp_path, root):
    async def main():
        errors = []
        async with make_controller(tmp_path) as controller:
            spec = SandboxSpec(provider="local", scope="agent", concurrency="fail")
            ref = await controller.open_session(
                harness="scribe", workspace=str(tmp_path), agent="a", sandbox=spec
            )
            for agent in ("a", "../../etc", "/abs"):
                try:
                    await controller.open_session(
                        harness="scribe", workspace=str(tmp_path), agent=agent, sandbox=spec
                    )
                except HarnessError as error:
                    errors.append(error)
            await controller.close_session(ref)
        return errors

    busy, traversal, absolute = anyio.run(main)
    assert busy.reason == "sandbox-failed" and "in use" in busy.hint
    assert traversal.reason == "invalid-request" and "traverse" in traversal.hint
    assert absolute.reason == "invalid-request" and "absolute" in absolute.hint
    assert not (root / "etc").exists()
