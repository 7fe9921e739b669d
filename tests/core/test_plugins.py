"""Plugin loading: entry points, HARNESS_CORE_PLUGINS, broken plugins, explicit registration."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness_core import HarnessError, Plugins, harness, hookimpl, plugins_from
from harness_core.plugin_manager import CORE_PLUGIN_NAME

from ..helpers import harness_cmd


def make_dist(root: Path, name: str, module_source: str, entry_points: dict[str, str]) -> None:
    """Write an installed-looking distribution (module + .dist-info) into ``root``."""
    module = name.replace("-", "_")
    (root / f"{module}.py").write_text(textwrap.dedent(module_source))
    info = root / f"{module}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[harness_core]\n{lines}\n")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    make_dist(
        root,
        "harness-greeter",
        """
        from harness_core import harness

        @harness("greeter")
        async def greet(message, session):
            return "hello " + message.content
        """,
        {"greeter": "harness_greeter:greet"},
    )
    make_dist(
        root,
        "harness-bare",
        """
        async def run(message, session):
            return "bare " + message.content
        """,
        {"bare": "harness_bare:run"},
    )
    make_dist(
        root,
        "harness-broken",
        """
        raise ImportError("this plugin cannot import")
        """,
        {"broken": "harness_broken:nothing"},
    )
    make_dist(
        root,
        "harness-typo",
        """
        from harness_hookspecs import hookimpl

        class Plugin:
            @hookimpl
            def register_harnesess(self, register):  # misspelt hook
                pass

        plugin = Plugin()
        """,
        {"typo": "harness_typo:plugin"},
    )
    return root


def _plugins_json(stdout: str) -> dict[str, list[dict[str, object]]]:
    """``harness plugins --json`` is JSON Lines: one object per plugin, broken ones flagged."""
    rows = [json.loads(line) for line in stdout.splitlines()]
    return {
        "plugins": [r for r in rows if not r["broken"]],
        "broken": [r for r in rows if r["broken"]],
    }


def run_cli(site: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**env, "PYTHONPATH": str(site)}
    return subprocess.run(
        [*harness_cmd(), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_installed_entry_points_load_and_broken_ones_are_reported(site, cli_env):
    out = run_cli(site, cli_env, "plugins", "--json")
    assert out.returncode == 0, out.stderr
    data = _plugins_json(out.stdout)
    names = {p["name"]: p for p in data["plugins"]}
    assert names["greeter"]["harnesses"] == ["greeter"]
    assert names["greeter"]["distribution"] == "harness-greeter"
    assert names["greeter"]["version"] == "1.2.3"
    assert names["bare"]["harnesses"] == ["bare"]
    broken = {b["name"]: b["error"] for b in data["broken"]}
    assert broken["broken"].startswith("import failed: ImportError")
    assert "unknown hook" in broken["typo"] or "registration failed" in broken["typo"]
    listed = run_cli(site, cli_env, "list")
    assert {"greeter", "bare"} <= set(listed.stdout.split())


def test_bare_async_function_entry_point_runs(site, cli_env, tmp_path):
    out = run_cli(site, cli_env, "run", "bare", "there", "--workspace", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    types = [json.loads(line)["type"] for line in out.stdout.splitlines()]
    assert types[-1] == "turn.completed"


def test_harness_core_plugins_limits_loading(site, cli_env):
    env = {**cli_env, "HARNESS_CORE_PLUGINS": "greeter"}
    data = _plugins_json(run_cli(site, env, "plugins", "--json").stdout)
    assert [p["name"] for p in data["plugins"]] == ["greeter"]
    assert data["broken"] == []
    env = {**cli_env, "HARNESS_CORE_PLUGINS": ""}
    data = _plugins_json(run_cli(site, env, "plugins", "--json").stdout)
    assert data == {"plugins": [], "broken": []}


def test_explicit_registration_without_entry_points():
    @harness("inline")
    async def inline(message, session):
        return "ok"

    plugins = plugins_from([inline])
    assert plugins.harness_names() == ["inline"]


def test_duplicate_harness_names_break_the_second_plugin_only():
    @harness("dup")
    async def one(message, session):
        return "1"

    @harness("dup")
    async def two(message, session):
        return "2"

    plugins = Plugins(load_entry_points=False)
    assert plugins.register(one, name="first")
    assert not plugins.register(two, name="second")
    assert plugins.harness_names() == ["dup"]
    assert plugins.broken[0].name == "second" and "duplicate" in plugins.broken[0].error


def test_registration_hook_that_raises_is_isolated():
    class Exploding:
        @hookimpl
        def register_harnesses(self, register):
            raise RuntimeError("boom")

    @harness("fine")
    async def fine(message, session):
        return "ok"

    plugins = Plugins(load_entry_points=False)
    plugins.register(Exploding(), name="exploding")
    plugins.register(fine)
    assert plugins.harness_names() == ["fine"]
    assert plugins.broken[0].name == "exploding"
    assert plugins.broken[0].error == "registration failed: RuntimeError: boom"


def test_non_plugin_object_is_reported():
    plugins = Plugins(load_entry_points=False)
    assert not plugins.register(object(), name="junk")
    assert plugins.broken[0].error == "not a plugin: no hook implementations"


class _Provides:
    """A plugin registering one of each kind (the sandbox provider and resolver are stand-ins
    that satisfy the protocols; nothing here calls them)."""

    name = "kit"

    async def provision(self, request):
        raise AssertionError("not called")

    async def finalize(self, handle, outcome):
        raise AssertionError("not called")

    async def resolve(self, request):
        return []

    @hookimpl
    def register_harnesses(self, register):
        @harness("provided")
        async def provided(message, session):
            return "ok"

        register(provided)

    @hookimpl
    def register_sandbox_providers(self, register):
        register(self)

    @hookimpl
    def register_credential_resolvers(self, register):
        register(self)

    @hookimpl
    def register_ledger_stores(self, register):
        from harness_core.ledger.memory import MemoryStore

        register("kitmem", lambda url: MemoryStore())


def test_registries_say_who_registered_what_and_are_read_only():
    plugins = Plugins(load_entry_points=False)
    assert plugins.register(_Provides(), name="provides"), plugins.broken
    info = plugins.info["provides"]
    assert (info.harnesses, info.sandbox_providers, info.credential_resolvers) == (
        ["provided"],
        ["kit"],
        ["kit"],
    )
    assert info.ledger_schemes == ["kitmem"]
    assert plugins.harnesses.owner("provided") == "provides"
    assert plugins.adapter("provided").describe().provider == "provided"
    with pytest.raises(TypeError):
        plugins.harnesses["other"] = plugins.adapter("provided")  # type: ignore[index]
    with pytest.raises(TypeError):
        plugins.info["other"] = info  # type: ignore[index]


def test_unregister_takes_back_everything_the_plugin_registered():
    plugins = Plugins(load_entry_points=False)
    assert plugins.register(_Provides(), name="provides")
    assert plugins.unregister("provides")
    assert not plugins.is_registered("provides")
    assert "provides" not in plugins.info
    assert not plugins.harnesses and not plugins.sandbox_providers
    assert not plugins.credential_resolvers and not plugins.ledger_schemes
    with pytest.raises(HarnessError) as caught:
        plugins.adapter("provided")
    assert caught.value.reason == "invalid-request"
    # Unknown names and the runtime's own dispatch hooks are refused, not removed.
    assert not plugins.unregister("provides")
    assert not plugins.unregister(CORE_PLUGIN_NAME)
    assert plugins.is_registered(CORE_PLUGIN_NAME)
    # The same names can be registered again.
    assert plugins.register(_Provides(), name="provides")
    assert plugins.harness_names() == ["provided"]


def test_a_failed_registration_keeps_nothing_of_the_plugin():
    class HalfBad(_Provides):
        @hookimpl
        def register_credential_resolvers(self, register):
            register(object())

    plugins = Plugins(load_entry_points=False)
    assert not plugins.register(HalfBad(), name="half")
    assert plugins.broken[-1].error == "registration failed: ValueError: not a credential resolver"
    assert not plugins.harnesses and not plugins.sandbox_providers
    assert "half" not in plugins.info and not plugins.is_registered("half")
