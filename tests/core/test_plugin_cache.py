"""``harness list`` / ``harness plugins`` answer from a cache of what the plugins register, and
the cache follows installs, uninstalls, upgrades and edits (it must never show a stale list)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..helpers import harness_cmd

PLUGIN = """
import os

with open(os.environ["IMPORT_LOG"], "a") as log:  # proves whether the listing imported us
    log.write("{module}\\n")

from harness_core import harness


@harness("{harness}")
async def run(message, session):
    return "ok"
"""


def install(site: Path, dist: str, harness: str, version: str = "1.0") -> None:
    """An installed-looking distribution: a module and its ``.dist-info`` with one entry point."""
    module = dist.replace("-", "_")
    (site / f"{module}.py").write_text(
        textwrap.dedent(PLUGIN.format(module=module, harness=harness))
    )
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[harness_core]\n{dist} = {module}:run\n")


def uninstall(site: Path, dist: str) -> None:
    module = dist.replace("-", "_")
    (site / f"{module}.py").unlink()
    for info in site.glob(f"{module}-*.dist-info"):
        shutil.rmtree(info)


@pytest.fixture
def env(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    return {
        **cli_env,
        "PYTHONPATH": str(site),
        "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
        "IMPORT_LOG": str(tmp_path / "imports.log"),
    }


def harness(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [*harness_cmd(), *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def imports(env: dict[str, str]) -> list[str]:
    try:
        return Path(env["IMPORT_LOG"]).read_text().split()
    except FileNotFoundError:
        return []


def test_the_second_listing_imports_no_plugin(env):
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    assert "alpha" in harness(env, "list").split()
    assert imports(env) == ["harness_alpha"]
    assert list(Path(env["HARNESS_CACHE_DIR"]).glob("plugins-*.json"))
    first = harness(env, "plugins", "--json")
    assert "alpha" in harness(env, "list").split()
    assert imports(env) == ["harness_alpha"], "the cached listing imported the plugin"
    assert json.loads(first.splitlines()[0]) is not None


def test_install_uninstall_upgrade_and_edit_invalidate(env):
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    assert "alpha" in harness(env, "list").split()

    install(site, "harness-beta", "beta")
    assert {"alpha", "beta"} <= set(harness(env, "list").split())

    uninstall(site, "harness-alpha")
    listed = harness(env, "list").split()
    assert "beta" in listed and "alpha" not in listed
    rows = [json.loads(line) for line in harness(env, "plugins", "--json").splitlines()]
    assert "harness-alpha" not in {row["name"] for row in rows}

    uninstall(site, "harness-beta")  # an upgrade: new version, different registration
    install(site, "harness-beta", "beta-two", version="2.0")
    listed = harness(env, "list").split()
    assert "beta-two" in listed and "beta" not in listed
    rows = {
        row["name"]: row for row in map(json.loads, harness(env, "plugins", "--json").splitlines())
    }
    assert rows["harness-beta"]["version"] == "2.0"

    # An edit in place (editable install, PYTHONPATH): no distribution changed, the source did.
    source = site / "harness_beta.py"
    source.write_text(source.read_text().replace('"beta-two"', '"beta-edited"'))
    listed = harness(env, "list").split()
    assert "beta-edited" in listed and "beta-two" not in listed


def test_plugin_selection_is_cached_separately(env):
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    install(site, "harness-beta", "beta")
    assert {"alpha", "beta"} <= set(harness(env, "list").split())
    only = {**env, "HARNESS_CORE_PLUGINS": "harness-beta"}
    assert harness(only, "list").split() == ["beta"]
    assert harness({**env, "HARNESS_CORE_PLUGINS": ""}, "list").split() == []
    assert {"alpha", "beta"} <= set(harness(env, "list").split())


def test_an_unwritable_or_damaged_cache_only_costs_time(env, tmp_path):
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    assert "alpha" in harness({**env, "HARNESS_CACHE_DIR": str(blocked)}, "list").split()
    harness(env, "list")
    for cached in Path(env["HARNESS_CACHE_DIR"]).glob("plugins-*.json"):
        cached.write_text("{not json")
    assert "alpha" in harness(env, "list").split()
    assert os.listdir(env["HARNESS_CACHE_DIR"])  # rewritten


def test_run_imports_only_the_harness_it_runs(env, tmp_path):
    """With a valid cache, ``harness run alpha`` does not import the other harness plugins."""
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    install(site, "harness-beta", "beta")
    harness(env, "list")  # builds the cache: imports both
    Path(env["IMPORT_LOG"]).unlink()
    out = harness(env, "run", "alpha", "hi", "--workspace", str(tmp_path), "--json", "--close")
    assert json.loads(out.splitlines()[-1])["type"] in {"session.closed", "turn.completed"}
    assert imports(env) == ["harness_alpha"]


COUNT_LOOKS = """
import contextlib, io, sys
from harness_core import plugin_cache
from harness_core.cli import _main

looks = []
fingerprint = plugin_cache.distributions_fingerprint
def counted():
    looks.append(1)
    return fingerprint()
plugin_cache.distributions_fingerprint = counted
with contextlib.redirect_stdout(io.StringIO()):
    code = _main(["run", sys.argv[1], "hi", "--workspace", sys.argv[2], "--close"])
print(code, len(looks))
"""


def test_a_run_looks_at_the_installed_distributions_once(env, tmp_path):
    """The parser's plugin options and the run's plugin choice share one look at what is
    installed (each look lists every ``sys.path`` entry and stats every distribution)."""
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    harness(env, "list")  # builds the cache
    done = subprocess.run(
        [sys.executable, "-c", COUNT_LOOKS, "alpha", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.stdout.split() == ["0", "1"], done.stderr


def test_a_run_sees_a_plugin_installed_after_the_cache_was_built(env, tmp_path):
    site = Path(env["PYTHONPATH"])
    install(site, "harness-alpha", "alpha")
    harness(env, "list")
    install(site, "harness-beta", "beta")
    out = harness(env, "run", "beta", "hi", "--workspace", str(tmp_path), "--json", "--close")
    assert json.loads(out.splitlines()[-1])["type"] in {"session.closed", "turn.completed"}
    uninstall(site, "harness-beta")
    done = subprocess.run(
        [*harness_cmd(), "run", "beta", "hi", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0 and "beta" in done.stderr
