"""The ``bubblewrap`` provider through the real Controller, with real processes.

The harness is ``stdio-jsonl`` running ``probe_agent.py`` (each prompt is Python code probing the
sandbox from inside); the runtime spawns it as ``handle.command_prefix + argv`` with the handle's
env and workspace, exactly as it spawns any harness CLI.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from harness_hookspecs import HarnessError, SandboxSpec, hookimpl
from harness_stdio_jsonl import plugin as stdio_plugin
from sandbox_bubblewrap import INSIDE_HOME, BubblewrapSandboxProvider, plugin
from sandbox_local import plugin as local_plugin

from harness_core import Controller, plugins_from
from harness_core.plugins import Plugins
from harness_core.testing.processes import group_members, wait_gone
from harness_core.testing.processes import with_marker as pids_with

PYTHON = os.path.realpath(sys.executable)
PROBE = str(Path(__file__).with_name("probe_agent.py"))
#: The host Python may live under the hidden host HOME (pyenv), and a checkout under /tmp is
#: hidden by the sandbox's private /tmp: expose both read-only.
EXPOSE = [os.path.realpath(sys.base_prefix), os.path.dirname(os.path.realpath(PROBE))]


class _Provider:
    """Registers a provider whose per-session directories go under a known runtime dir."""

    def __init__(self, provider: BubblewrapSandboxProvider) -> None:
        self.provider = provider

    @hookimpl
    def register_sandbox_providers(self, register) -> None:
        register(self.provider)


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hbwt-"))  # short: the proxy socket lives here
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make(bwrap, tmp_path, runtime_dir):
    """``make()`` -> (controller, marker); the marker is on every sandboxed command line."""

    def factory(provider: BubblewrapSandboxProvider | None = None) -> tuple[Controller, str]:
        provider = provider or BubblewrapSandboxProvider(runtime_dir=runtime_dir)
        controller = Controller(
            plugins=plugins_from([stdio_plugin, _Provider(provider)]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        )
        return controller, f"marker-{uuid.uuid4().hex}"

    return factory


@pytest.fixture
def workspace(tmp_path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def spec(network: str, *, allow=(), **config) -> SandboxSpec:
    return SandboxSpec(
        provider="bubblewrap",
        network=network,
        allow=allow,
        config={"ro_paths": EXPOSE, **config},
    )


async def open_probe(controller, workspace, marker, sandbox, mode="per-turn"):
    return await controller.open_session(
        harness="stdio-jsonl",
        workspace=str(workspace),
        sandbox=sandbox,
        config={"command": [PYTHON, "-I", PROBE, marker], "mode": mode},
    )


async def probe(controller, ref, code: str):
    result = await controller.run_turn(ref, code)
    assert result.ok, (result.status, result.reason, [e.type for e in result.events])
    return json.loads(result.text)


def bwrap_pid(marker: str) -> int:
    for pid in pids_with(marker):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if os.path.basename(f.read().split(b"\0")[0]) == b"bwrap":
                return pid
    raise AssertionError("no bwrap process carries the marker")


def wait_no_pids(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := pids_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# -- registration ---------------------------------------------------------------------------------


def test_the_entry_point_module_and_the_installed_entry_point_register_bubblewrap():
    plugins = plugins_from([plugin])
    assert plugins.broken == []
    assert isinstance(plugins.sandbox_providers["bubblewrap"], BubblewrapSandboxProvider)
    installed = Plugins(load_entry_points=True)
    assert isinstance(installed.sandbox_providers["bubblewrap"], BubblewrapSandboxProvider)


# -- network policies -----------------------------------------------------------------------------


def test_none_reaches_nothing(make, workspace, servers):
    controller, marker = make()
    a = servers["allowed"]

    async def main():
        async with controller:
            ref = await open_probe(controller, workspace, marker, spec("none"))
            return await probe(
                controller,
                ref,
                f"result = dict(host_tcp=tcp('127.0.0.1', {a}), outside=tcp('192.0.2.1', 80),"
                f" http=get('http://127.0.0.1:{a}/'),"
                " proxy_env=sorted(k for k in os.environ if k.lower().endswith('_proxy')))",
            )

    out = anyio.run(main)
    assert out == {
        "host_tcp": "ECONNREFUSED",
        "outside": "ENETUNREACH",
        "http": "ECONNREFUSED",
        "proxy_env": [],
    }


def test_open_reaches_host_loopback(make, workspace, servers):
    controller, marker = make()
    a = servers["allowed"]

    async def main():
        async with controller:
            ref = await open_probe(controller, workspace, marker, spec("open"))
            return await probe(controller, ref, f"result = get('http://127.0.0.1:{a}/')")

    assert anyio.run(main) == f"hello from {servers['allowed']}"


def test_allowlist_allows_exactly_the_listed_endpoint(make, workspace, servers):
    controller, marker = make()
    a, d = servers["allowed"], servers["denied"]

    async def main():
        async with controller:
            ref = await open_probe(
                controller, workspace, marker, spec("allowlist", allow=[f"127.0.0.1:{a}"])
            )
            return await probe(
                controller,
                ref,
                f"result = dict(allowed=get('http://127.0.0.1:{a}/'),"
                f" denied=get('http://127.0.0.1:{d}/'),"
                f" allowed_direct=get('http://127.0.0.1:{a}/', proxy=False),"
                f" denied_direct=tcp('127.0.0.1', {d}), outside=tcp('192.0.2.1', 80))",
            )

    out = anyio.run(main)
    assert out == {
        "allowed": f"hello from {a}",
        "denied": "http-403",
        "allowed_direct": f"hello from {a}",  # the forwarder's loopback tunnel
        "denied_direct": "ECONNREFUSED",
        "outside": "ENETUNREACH",
    }


def test_mcp_only_reaches_the_mcp_and_model_endpoints_only(make, workspace, servers):
    controller, marker = make()
    a, m, d = servers["allowed"], servers["model"], servers["denied"]
    sandbox = spec("mcp-only", mcp=f"http://127.0.0.1:{a}/mcp", model_api=[f"http://127.0.0.1:{m}"])

    async def main():
        async with controller:
            ref = await open_probe(controller, workspace, marker, sandbox)
            return await probe(
                controller,
                ref,
                f"result = dict(mcp=get('http://127.0.0.1:{a}/'),"
                f" mcp_direct=get('http://127.0.0.1:{a}/', proxy=False),"
                f" model=get('http://127.0.0.1:{m}/'),"
                f" other=get('http://127.0.0.1:{d}/'), other_direct=tcp('127.0.0.1', {d}))",
            )

    out = anyio.run(main)
    assert out == {
        "mcp": f"hello from {a}",
        "mcp_direct": f"hello from {a}",
        "model": f"hello from {m}",
        "other": "http-403",
        "other_direct": "ECONNREFUSED",
    }


def test_bad_network_requests_are_refused_before_anything_runs(make, workspace, servers):
    controller, marker = make()

    cases = {
        "mcp-only with allow": spec("mcp-only", allow=["127.0.0.1:1"], mcp="127.0.0.1:2"),
        "mcp-only without endpoints": spec("mcp-only"),
        "none with allow": spec("none", allow=["127.0.0.1:1"]),
        "allow not host:port": spec("allowlist", allow=["nope"]),
        "unknown config key": spec("none", colour="red"),
        "durable scope without local": SandboxSpec(provider="bubblewrap", scope="agent"),
    }

    async def attempts():
        errors = {}
        async with controller:
            for name, sandbox in cases.items():
                with pytest.raises(HarnessError) as caught:
                    await open_probe(controller, workspace, marker, sandbox)
                errors[name] = caught.value
        return errors

    for name, error in anyio.run(attempts).items():
        assert error.reason == "invalid-request", name
        assert "\n" not in str(error)

    async def dangerous_open():
        async with controller:
            with pytest.raises(HarnessError) as caught:
                await controller.open_session(
                    harness="stdio-jsonl",
                    workspace=str(workspace),
                    posture="dangerous",
                    sandbox=spec("open"),
                    config={"command": [PYTHON, PROBE]},
                )
            return caught.value

    assert anyio.run(dangerous_open).reason == "invalid-request"
    assert wait_no_pids(marker) == []


# -- filesystem and HOME --------------------------------------------------------------------------


def test_workspace_is_the_only_writable_host_path_and_home_is_private(make, workspace, runtime_dir):
    controller, marker = make()
    outside = Path(__file__).parent  # a host directory outside the workspace, not under /tmp
    host_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    exposed_top = {
        Path(p).relative_to(host_home).parts[0] for p in EXPOSE if host_home in Path(p).parents
    }
    host_entries = set(os.listdir(host_home)) - exposed_top
    seen: dict[str, object] = {}

    async def main():
        async with controller:
            ref = await open_probe(controller, workspace, marker, spec("none"))
            other = await open_probe(controller, workspace, marker, spec("none"))
            out = await probe(
                controller,
                ref,
                f"result = dict(ws=write('out.txt', 'from inside'), cwd=os.getcwd(),"
                f" etc=write('/etc/harness-probe'), usr=write('/usr/harness-probe'),"
                f" outside=write({str(outside / 'harness-probe')!r}),"
                f" home=os.environ['HOME'], home_write=write(os.environ['HOME'] + '/note', 'hi'),"
                f" host_home=listdir({str(host_home)!r}), homes=listdir('/home'),"
                f" tmpdir=os.environ.get('TMPDIR'), tmp=listdir('/tmp'))",
            )
            again = await probe(
                controller, ref, "result = open(os.environ['HOME'] + '/note').read()"
            )
            other_home = await probe(controller, other, "result = listdir(os.environ['HOME'])")
            seen["dirs"] = sorted(p.name for p in runtime_dir.iterdir())
            seen["notes"] = sorted(str(p) for p in runtime_dir.glob("hbw-*/home/note"))
            await controller.close_session(ref)
            await controller.close_session(other)
            seen["after_close"] = sorted(p.name for p in runtime_dir.iterdir())
            return out, again, other_home

    out, again, other_home = anyio.run(main)
    assert out["ws"] == "written" and out["cwd"] == str(workspace.resolve())
    assert (workspace / "out.txt").read_text() == "from inside"  # landed on the host
    assert out["etc"] == "EROFS" and out["usr"] == "EROFS" and out["outside"] == "EROFS"
    assert not (outside / "harness-probe").exists()
    assert out["home"] == INSIDE_HOME and out["home_write"] == "written"
    assert again == "hi"  # HOME persists across turns of the session
    assert other_home == []  # ... and is the session's own
    assert host_entries and not set(out["host_home"]) & host_entries  # host HOME hidden
    assert out["homes"] == [] and out["tmpdir"] == "/tmp"
    # /tmp is private: only the mount point leading to a workspace under /tmp, nothing of the host
    # (and to the exposed probe directory when the checkout itself is under /tmp)
    tops = {
        Path(path).parts[2]
        for path in (workspace.resolve(), *EXPOSE)
        if Path(path).parts[1] == "tmp"
    }
    assert set(out["tmp"]) <= tops and runtime_dir.name not in out["tmp"]
    assert len(seen["dirs"]) == 2 and len(seen["notes"]) == 1  # one private dir per session
    assert seen["after_close"] == []  # finalize removed HOME and the proxy socket


def test_workspace_is_validated(make, tmp_path):
    controller, marker = make()

    bad = [tmp_path / "missing", "/", "/etc", "/usr/lib", "/tmp", os.path.expanduser("~")]

    async def attempts():
        reasons = []
        async with controller:
            for workspace in bad:
                with pytest.raises(HarnessError) as caught:
                    await open_probe(controller, workspace, marker, spec("none"))
                reasons.append(caught.value.reason)
        return reasons

    assert anyio.run(attempts) == ["invalid-request"] * len(bad)


def test_local_workspace_composition_keeps_a_durable_agent_workspace(make, tmp_path):
    controller, marker = make()
    root = tmp_path / "workspaces"
    sandbox = SandboxSpec(
        provider="bubblewrap",
        network="none",
        scope="agent",
        config={"ro_paths": EXPOSE, "workspace": "local", "root": str(root)},
    )

    async def main():
        async with controller:
            ref = await controller.open_session(
                harness="stdio-jsonl",
                workspace=str(tmp_path),
                agent="reviewer",
                sandbox=sandbox,
                config={"command": [PYTHON, "-I", PROBE, marker]},
            )
            out = await probe(controller, ref, "result = [os.getcwd(), write('kept.txt', 'k')]")
            await controller.close_session(ref)
            return out

    cwd, wrote = anyio.run(main)
    durable = root.resolve() / "agent" / "reviewer"
    assert cwd == str(durable) and wrote == "written"
    assert (durable / "kept.txt").read_text() == "k"
    from sandbox_local import LocalSandboxProvider

    assert LocalSandboxProvider(root).last_outcome("agent", "reviewer", None)["outcome"] == (
        "success"
    )
    assert local_plugin is not None


# -- processes ------------------------------------------------------------------------------------


def test_cancel_leaves_no_process_in_the_sandbox(make, workspace, servers):
    controller, marker = make()
    a = servers["allowed"]
    seen: dict[str, object] = {}

    async def main():
        async with controller:
            ref = await open_probe(
                controller, workspace, marker, spec("allowlist", allow=[f"127.0.0.1:{a}"])
            )
            code = "sleeper(); status('sleeping'); time.sleep(120)"
            async with controller.turn(ref, code) as turn:
                async for event in turn:
                    if event.type == "status" and event.payload.message == "sleeping":
                        seen["pids"] = pids_with(marker)
                        seen["group"] = os.getpgid(bwrap_pid(marker))
                        await controller.cancel_turn(ref)
            seen["status"] = turn.result().status
            seen["group_left"] = await anyio.to_thread.run_sync(wait_gone, seen["group"])
            seen["left"] = await anyio.to_thread.run_sync(wait_no_pids, marker)
            after = await probe(controller, ref, f"result = get('http://127.0.0.1:{a}/')")
            seen["next_turn"] = after

    anyio.run(main)
    # bwrap + forwarder + agent + the setsid'd sleeper, at least
    assert len(seen["pids"]) >= 4, seen["pids"]
    assert seen["status"] == "cancelled"
    assert seen["group_left"] == [] and seen["left"] == []
    assert seen["next_turn"] == f"hello from {a}"  # the proxy outlives a cancelled turn
    assert wait_no_pids(marker) == []


def test_close_leaves_no_process_and_stops_the_proxy(make, workspace, servers, runtime_dir):
    controller, marker = make()
    a = servers["allowed"]
    seen: dict[str, object] = {}

    async def main():
        async with controller:
            ref = await open_probe(
                controller,
                workspace,
                marker,
                spec("allowlist", allow=[f"127.0.0.1:{a}"]),
                mode="session",
            )
            out = await probe(controller, ref, f"sleeper(); result = get('http://127.0.0.1:{a}/')")
            assert out == f"hello from {a}"
            seen["pids"] = pids_with(marker)
            seen["group"] = os.getpgid(bwrap_pid(marker))
            seen["sockets"] = list(runtime_dir.glob("hbw-*/proxy.sock"))
            await controller.close_session(ref)
            seen["group_left"] = await anyio.to_thread.run_sync(wait_gone, seen["group"])
            seen["left"] = await anyio.to_thread.run_sync(wait_no_pids, marker)
            seen["after"] = list(runtime_dir.iterdir())

    anyio.run(main)
    assert len(seen["pids"]) >= 4, seen["pids"]  # the session process lived between turns
    assert len(seen["sockets"]) == 1
    assert seen["group_left"] == [] and seen["left"] == []
    assert seen["after"] == []  # proxy socket and private dir gone
    assert group_members(seen["group"]) == []


def test_missing_bwrap_is_a_one_line_sandbox_failed(tmp_path, workspace, runtime_dir):
    # Runs without bwrap too: the provider must say what is missing, in one line.
    provider = BubblewrapSandboxProvider(bwrap="no-such-bwrap-here", runtime_dir=runtime_dir)
    controller = Controller(
        plugins=plugins_from([stdio_plugin, _Provider(provider)]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )
    marker = f"marker-{uuid.uuid4().hex}"

    async def main():
        async with controller:
            with pytest.raises(HarnessError) as caught:
                await open_probe(controller, workspace, marker, spec("none"))
            return caught.value

    error = anyio.run(main)
    assert error.reason == "sandbox-failed"
    assert "bwrap not found" in str(error) and "\n" not in str(error)
    assert list(runtime_dir.iterdir()) == []


def test_bwrap_without_namespaces_is_a_one_line_sandbox_failed(tmp_path, workspace, runtime_dir):
    # A bwrap that fails its probe the way a host without user namespaces does.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    provider = BubblewrapSandboxProvider(bwrap=str(fake), runtime_dir=runtime_dir)
    controller = Controller(
        plugins=plugins_from([stdio_plugin, _Provider(provider)]),
        ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
        state_dir=tmp_path / "state",
    )

    async def main():
        errors = []
        async with controller:
            for _ in range(2):  # probed once, refused every time
                with pytest.raises(HarnessError) as caught:
                    await open_probe(controller, workspace, "m", spec("none"))
                errors.append(caught.value)
        return errors

    errors = anyio.run(main)
    assert [e.reason for e in errors] == ["sandbox-failed"] * 2
    assert "namespaces" in str(errors[0]) and "\n" not in str(errors[0])
    assert list(runtime_dir.iterdir()) == []


def test_the_adapter_state_dir_stays_writable_inside(make, workspace, tmp_path):
    """Adapters keep CLI config and native session ids in ``context.state_dir``: the runtime
    passes it in the SandboxRequest and the provider binds it writable at the same path."""
    controller, marker = make()

    async def main():
        async with controller:
            ref = await open_probe(controller, workspace, marker, spec("none"))
            return await probe(
                controller,
                ref,
                "p = os.environ['HARNESS_STATE_DIR']\n"
                "open(os.path.join(p, 'native-id'), 'w').write('thread-123')\n"
                "result = p",
            )

    state_dir = anyio.run(main)
    assert Path(state_dir).is_relative_to(tmp_path / "state")
    assert (Path(state_dir) / "native-id").read_text() == "thread-123"  # on the host
