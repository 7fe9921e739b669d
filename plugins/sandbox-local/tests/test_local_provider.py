"""The ``local`` provider on its own: scopes, keys, symlinks, concurrency, finalize."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxRequest, SandboxSpec
from sandbox_local import LocalSandboxProvider, default_root, validate_key

from harness_core.testing.waiting import wait_until


def request(scope="run", *, agent=None, user=None, session="s1", **spec) -> SandboxRequest:
    return SandboxRequest(
        session_id=session,
        harness="echo",
        workspace=None,
        spec=SandboxSpec(provider="local", scope=scope, **spec),
        agent=agent,
        user=user,
    )


def provision(provider, req):
    return anyio.run(provider.provision, req)


def finalize(provider, handle, outcome="success"):
    anyio.run(provider.finalize, handle, outcome)


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "workspaces"


@pytest.fixture
def provider(root) -> LocalSandboxProvider:
    return LocalSandboxProvider(root)


# -- scopes ---------------------------------------------------------------------------------


def test_run_scope_is_fresh_and_removed_on_finalize(provider, root):
    a = provision(provider, request("run", session="s1"))
    b = provision(provider, request("run", session="s1"))
    assert a.provider == "local"
    assert a.workspace != b.workspace
    path = Path(a.workspace)
    assert path.is_dir() and path.parent == root.resolve() / "run"
    assert oct(path.stat().st_mode & 0o777) == "0o700"
    (path / "file.txt").write_text("x")
    finalize(provider, a, "success")
    assert not path.exists()
    finalize(provider, a, "success")  # idempotent
    finalize(provider, b, "failure")
    assert not Path(b.workspace).exists()


def test_run_scope_keep_on_failure(root):
    provider = LocalSandboxProvider(root, keep="failure")
    ok = provision(provider, request("run"))
    bad = provision(provider, request("run"))
    finalize(provider, ok, "success")
    finalize(provider, bad, "cancelled")
    assert not Path(ok.workspace).exists()
    assert Path(bad.workspace).is_dir()


def test_unsafe_session_id_is_hashed_for_the_run_directory(provider, root):
    handle = provision(provider, request("run", session="../../x/y"))
    path = Path(handle.workspace)
    assert path.parent == root.resolve() / "run"
    assert ".." not in path.name and "/" not in path.name


def test_agent_scope_is_durable_and_records_outcome(provider, root):
    first = provision(provider, request("agent", agent="reviewer", session="one"))
    path = Path(first.workspace)
    assert path == root.resolve() / "agent" / "reviewer"
    (path / "notes.md").write_text("kept")
    finalize(provider, first, "failure")
    assert path.is_dir()
    assert provider.last_outcome("agent", "reviewer", None)["outcome"] == "failure"
    assert provider.last_outcome("agent", "reviewer", None)["session_id"] == "one"

    second = provision(provider, request("agent", agent="reviewer", session="two", user="bob"))
    assert Path(second.workspace) == path
    assert (path / "notes.md").read_text() == "kept"
    finalize(provider, second, "success")
    assert provider.last_outcome("agent", "reviewer", None)["outcome"] == "success"


def test_agent_user_scope_is_separate_per_user_and_from_the_agent_tree(provider, root):
    alice = provision(provider, request("agent-user", agent="reviewer", user="alice"))
    bob = provision(provider, request("agent-user", agent="reviewer", user="bob@example.com"))
    shared = provision(provider, request("agent", agent="reviewer"))
    assert Path(alice.workspace) == root.resolve() / "agent-user" / "reviewer" / "alice"
    assert Path(bob.workspace) == root.resolve() / "agent-user" / "reviewer" / "bob@example.com"
    # The shared agent workspace does not contain the per-user ones.
    assert not Path(alice.workspace).is_relative_to(Path(shared.workspace))
    for handle in (alice, bob, shared):
        finalize(provider, handle)


@pytest.mark.parametrize(
    ("scope", "agent", "user"),
    [("agent", None, None), ("agent-user", "reviewer", None), ("agent-user", None, "bob")],
)
def test_durable_scopes_need_their_keys(provider, scope, agent, user):
    with pytest.raises(HarnessError) as info:
        provision(provider, request(scope, agent=agent, user=user))
    assert info.value.reason == "invalid-request"
    assert "needs a" in info.value.hint


def test_config_root_overrides_the_provider_root(provider, tmp_path):
    other = tmp_path / "other"
    handle = provision(provider, request("agent", agent="a", config={"root": str(other)}))
    assert Path(handle.workspace) == other.resolve() / "agent" / "a"
    finalize(provider, handle)


def test_default_root_from_environment(tmp_path):
    assert default_root({"HARNESS_WORKSPACES": str(tmp_path)}) == tmp_path
    assert default_root({"XDG_DATA_HOME": "/data"}) == Path("/data/harness-core/workspaces")
    assert str(default_root({})).endswith(".local/share/harness-core/workspaces")


def test_network_policies_are_refused(provider):
    for policy in ("none", "mcp-only", "allowlist"):
        with pytest.raises(HarnessError) as info:
            provision(provider, request("run", network=policy))
        assert info.value.reason == "policy-refused"


# -- keys -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("..", "traverse"),
        (".", "traverse"),
        ("../etc", "traverse"),
        ("a/../../b", "traverse"),
        ("..\\x", "traverse"),
        ("/etc", "absolute"),
        ("/", "absolute"),
        ("~root", "absolute"),
        ("C:stuff", "absolute"),
        ("a/b", "separator"),
        ("a\\b", "separator"),
        ("a\x00b", "control"),
        ("a\nb", "control"),
        (".hidden", "letters"),
        ("-rf", "letters"),
        ("x" * 129, "letters"),
        ("spaces are bad", "letters"),
    ],
)
def test_unsafe_keys_are_refused_with_a_fixed_one_line_error(provider, root, value, fragment):
    for scope, agent, user in (("agent", value, None), ("agent-user", "ok", value)):
        with pytest.raises(HarnessError) as info:
            provision(provider, request(scope, agent=agent, user=user))
        error = info.value
        assert error.reason == "invalid-request"
        assert fragment in error.hint
        assert "\n" not in str(error)
        if len(value) > 2:
            assert value not in str(error)  # the offending value is never echoed
    # nothing was created for a refused key
    assert not (root / "agent").exists()
    assert not (root / "agent-user").exists()


def test_validate_key_accepts_ordinary_names():
    for value in ("reviewer", "bob@example.com", "agent-1.2", "A_B+c"):
        assert validate_key("agent", value) == value


def test_symlinked_workspace_escaping_the_root_is_refused(provider, root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "agent").mkdir(parents=True)
    os.symlink(outside, root / "agent" / "evil")
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent", agent="evil"))
    assert info.value.reason == "sandbox-failed"
    assert "symlink" in info.value.hint
    assert list(outside.iterdir()) == []


def test_symlinked_scope_directory_is_refused(provider, root, tmp_path):
    outside = tmp_path / "outside"
    (outside / "alice").mkdir(parents=True)
    root.mkdir(parents=True)
    os.symlink(outside, root / "agent-user")
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent-user", agent="alice", user="u"))
    assert info.value.reason == "sandbox-failed"


def test_symlink_to_another_agent_inside_the_root_is_refused(provider, root):
    victim = provision(provider, request("agent", agent="victim"))
    finalize(provider, victim)
    os.symlink(root / "agent" / "victim", root / "agent" / "thief")
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent", agent="thief"))
    assert info.value.reason == "sandbox-failed"


def test_symlinked_lock_file_is_refused(provider, root, tmp_path):
    target = tmp_path / "target"
    target.write_text("")
    (root / ".locks" / "agent").mkdir(parents=True)
    os.symlink(target, root / ".locks" / "agent" / "a.lock")
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent", agent="a"))
    assert info.value.reason == "sandbox-failed"


def test_a_root_that_is_itself_a_symlink_is_fine(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    provider = LocalSandboxProvider(tmp_path / "link")
    handle = provision(provider, request("agent", agent="a"))
    assert Path(handle.workspace) == real / "agent" / "a"
    finalize(provider, handle)


# -- concurrency ----------------------------------------------------------------------------


def test_fail_policy_refuses_a_busy_durable_workspace(provider):
    holder = provision(provider, request("agent", agent="a", concurrency="fail"))
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent", agent="a", concurrency="fail"))
    assert info.value.reason == "sandbox-failed"
    assert "in use" in info.value.hint and "queue" in info.value.hint
    finalize(provider, holder)
    again = provision(provider, request("agent", agent="a", concurrency="fail"))
    finalize(provider, again)


def test_queue_policy_waits_for_the_holder(provider, root, lock_descriptors):
    order: list[str] = []

    async def main():
        first = await provider.provision(request("agent", agent="a", session="first"))
        order.append("first-in")

        async def second():
            handle = await provider.provision(request("agent", agent="a", session="second"))
            order.append("second-in")
            await provider.finalize(handle, "success")

        async with anyio.create_task_group() as tg:
            tg.start_soon(second)
            # the second has found the lock held and waits for it
            await wait_until(lambda: lock_descriptors(root) == 2, what="the second provision")
            assert order == ["first-in"]
            order.append("first-out")
            await provider.finalize(first, "success")

    anyio.run(main)
    assert order == ["first-in", "first-out", "second-in"]
    assert provider.last_outcome("agent", "a", None)["session_id"] == "second"


def test_queue_policy_times_out_when_configured(provider):
    holder = provision(provider, request("agent", agent="a"))
    started = time.monotonic()
    with pytest.raises(HarnessError) as info:
        provision(provider, request("agent", agent="a", config={"queue_timeout": 0.3}))
    assert info.value.reason == "sandbox-failed"
    assert "timed out" in info.value.hint
    assert time.monotonic() - started >= 0.25
    finalize(provider, holder)


def test_queue_wait_is_cancellable(provider):
    holder = provision(provider, request("agent", agent="a"))

    async def main():
        with anyio.move_on_after(0.2):
            await provider.provision(request("agent", agent="a"))
            raise AssertionError("should have waited")

    anyio.run(main)
    finalize(provider, holder)
    # the cancelled waiter did not leave the lock held
    finalize(provider, provision(provider, request("agent", agent="a", concurrency="fail")))


HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def _hold_in_another_process(lock: Path, seconds: float) -> subprocess.Popen[str]:
    lock.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "locked"
    return process


def test_the_lock_works_across_processes(provider, root):
    lock = root / ".locks" / "agent-user" / "a" / "u.lock"
    holder = _hold_in_another_process(lock, 0.8)
    try:
        with pytest.raises(HarnessError) as info:
            provision(provider, request("agent-user", agent="a", user="u", concurrency="fail"))
        assert info.value.reason == "sandbox-failed"
        started = time.monotonic()
        handle = provision(provider, request("agent-user", agent="a", user="u"))  # queue
        waited = time.monotonic() - started
        assert waited >= 0.3
        assert holder.poll() is not None  # we got in only after the other process let go
        finalize(provider, handle)
    finally:
        holder.kill()
        holder.wait()


def test_fork_policy_copies_a_busy_workspace(provider, root):
    holder = provision(provider, request("agent", agent="a", session="holder"))
    durable = Path(holder.workspace)
    (durable / "src").mkdir()
    (durable / "src" / "main.py").write_text("print(1)\n")
    os.symlink("/etc/passwd", durable / "link")

    fork = provision(provider, request("agent", agent="a", session="forker", concurrency="fork"))
    forked = Path(fork.workspace)
    assert forked != durable
    assert forked.parent == root.resolve() / "fork"
    assert (forked / "src" / "main.py").read_text() == "print(1)\n"
    assert (forked / "link").is_symlink()  # copied as a link, not followed
    (forked / "src" / "main.py").write_text("changed\n")
    assert (durable / "src" / "main.py").read_text() == "print(1)\n"

    finalize(provider, fork, "success")
    assert not forked.exists()
    # the fork never held the lock: the holder still does
    with pytest.raises(HarnessError):
        provision(provider, request("agent", agent="a", concurrency="fail"))
    finalize(provider, holder, "success")
    assert provider.last_outcome("agent", "a", None)["session_id"] == "holder"


def test_fork_policy_uses_the_durable_workspace_when_free(provider, root):
    handle = provision(provider, request("agent", agent="a", concurrency="fork"))
    assert Path(handle.workspace) == root.resolve() / "agent" / "a"
    finalize(provider, handle)


def test_foreign_handles_are_ignored_on_finalize(provider, root, tmp_path):
    """A handle this provider did not make (no state, or another's) finalizes nothing: no
    workspace removed, no lock released, no outcome recorded - not even for its own paths."""
    from harness_hookspecs import SandboxHandle

    holder = provision(provider, request("agent", agent="a", session="holder"))
    durable = Path(holder.workspace)
    (durable / "kept.txt").write_text("kept")
    fresh = provision(provider, request("run", session="fresh"))
    (Path(fresh.workspace) / "kept.txt").write_text("kept")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("kept")
    for workspace in (None, "/", str(outside), str(durable), fresh.workspace):
        for state in (None, object(), {"kind": "durable"}):
            finalize(provider, SandboxHandle(provider="local", workspace=workspace, state=state))
    for path in (durable, Path(fresh.workspace), outside):
        assert (path / "kept.txt").read_text() == "kept", path
    assert provider.last_outcome("agent", "a", None) is None  # nothing recorded
    with pytest.raises(HarnessError):  # the holder still holds the lock
        provision(provider, request("agent", agent="a", concurrency="fail"))
    finalize(provider, holder, "success")
    finalize(provider, fresh, "success")
    assert provider.last_outcome("agent", "a", None)["session_id"] == "holder"
    assert not Path(fresh.workspace).exists()
