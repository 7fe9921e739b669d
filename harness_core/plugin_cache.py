"""What the installed plugins register, cached: ``harness list`` / ``harness plugins`` answer
without importing every plugin and its dependencies.

The cache is keyed by what decides the answer:

- the installed distributions: every ``*.dist-info`` / ``*.egg-info`` on ``sys.path`` (name and
  version are in the directory name) with the mtime and size of its ``entry_points.txt``
  (installing, upgrading or uninstalling a distribution changes it);
- the source files of every module loaded while listing that live outside the interpreter's
  prefixes (editable installs, ``PYTHONPATH``), by mtime and size, so editing an editable
  plugin invalidates it too;
- ``HARNESS_CORE_PLUGINS``, the interpreter environment and ``sys.path``, which pick the
  cache file (``harness`` and ``python -m harness_core.cli`` see different paths).

Files live under ``$HARNESS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/harnessplane``, i.e.
``~/.cache/harnessplane``), written atomically. A missing, stale, unreadable or unwritable cache
only costs time: the plugins are then loaded as without it. Only listings come from here; running
a harness always loads the real plugin.
"""

from __future__ import annotations

import os
import sys
from binascii import crc32  # zlib's CRC-32, without importing zlib (start-up)
from typing import TYPE_CHECKING, Any

from .cache_files import cache_dir, read_json, write_json

if TYPE_CHECKING:
    from .plugin_manager import Plugins

#: Hooks whose registrations matter only when asked for by name (a harness, a sandbox provider,
#: a ledger scheme), or only to the conformance kit.
_NAMED_ONLY_HOOKS = frozenset(
    {
        "register_harnesses",
        "register_sandbox_providers",
        "register_ledger_stores",
        "conformance_profile",
        "register_commands",  # the command line loads these itself (harness_core.cli.commands)
    }
)

#: Bump when the stored shape or the listing's content changes.
FORMAT = 3
_ENV_PLUGINS = "HARNESS_CORE_PLUGINS"  # plugin_manager.ENV_PLUGINS (not imported: it is slow)
_CORE_PLUGIN_NAME = "harness_core.dispatch"  # plugin_manager.CORE_PLUGIN_NAME
_DIST_SUFFIXES = (".dist-info", ".egg-info")

Listing = dict[str, Any]


def cache_path() -> str:
    """This environment's cache file for the current plugin selection."""
    selection = os.environ.get(_ENV_PLUGINS, "\1")
    key = "\0".join((sys.prefix, sys.executable, sys.version, selection, *sys.path))
    return os.path.join(cache_dir(), f"plugins-{crc32(key.encode()):08x}.json")


def distributions_fingerprint() -> list[list[Any]]:
    """The installed distributions as ``sys.path`` shows them (cheap: a listing and a stat each).

    Not the directories' own mtimes: the current directory (``python -m``) and ``/tmp`` change
    all the time, and a module file appearing matters only to a plugin that failed to import,
    which disables the cache anyway."""
    parts: list[list[Any]] = []
    for entry in sys.path:
        where = entry or "."
        try:
            with os.scandir(where) as found:
                names = sorted(e.name for e in found if e.name.endswith(_DIST_SUFFIXES))
        except NotADirectoryError:  # a zip file: its mtime
            try:
                parts.append([entry, os.stat(where).st_mtime_ns])
            except OSError:
                pass
            continue
        except OSError:
            continue
        parts.append([entry])
        for name in names:
            try:
                st = os.stat(os.path.join(where, name, "entry_points.txt"))
            except OSError:
                parts.append([name])
            else:
                parts.append([name, st.st_mtime_ns, st.st_size])
    return parts


def _file_stamp(path: str) -> list[Any] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_mtime_ns, st.st_size]


def _source_files() -> list[str]:
    """Files of loaded modules outside the interpreter's prefixes (editable / PYTHONPATH code)."""
    prefixes = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    files = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and not path.startswith(prefixes):
            files.add(path)
    return sorted(files)


def read() -> Listing | None:
    """The cached listing if it is still right for what is installed, else ``None``."""
    stored = read_json(cache_path())
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        return None
    if stored.get("distributions") != distributions_fingerprint():
        return None
    for stamp in stored.get("sources", ()):
        if _file_stamp(stamp[0]) != stamp:
            return None
    listing: Listing = stored["listing"]
    return listing


def build() -> Listing:
    """Load the plugins and describe what they register (what ``harness plugins`` prints)."""
    from .plugin_manager import get_plugins, installed_entry_points

    plugins = get_plugins()
    commands = _commands(plugins)
    entry_points = [[e.name, e.value, e.distribution, e.version] for e in installed_entry_points()]
    rows: list[dict[str, Any]] = [
        {
            "name": info.name,
            "distribution": info.distribution,
            "version": info.version,
            "harnesses": info.harnesses,
            "sandbox_providers": info.sandbox_providers,
            "credential_resolvers": info.credential_resolvers,
            "ledger_schemes": info.ledger_schemes,
            "hooks": info.hooks,
            "commands": commands.get(name, ([], False))[0],
            "run_options": commands.get(name, ([], False))[1],
            "broken": False,
            "error": None,
        }
        for name, info in sorted(plugins.info.items())
        if name != _CORE_PLUGIN_NAME
    ]
    empty: dict[str, Any] = {
        "distribution": None,
        "version": None,
        "harnesses": [],
        "sandbox_providers": [],
        "credential_resolvers": [],
        "ledger_schemes": [],
        "hooks": [],
        "commands": [],
        "run_options": False,
    }
    rows += [{"name": b.name, **empty, "broken": True, "error": b.error} for b in plugins.broken]
    return {"harnesses": plugins.harness_names(), "plugins": rows, "entry_points": entry_points}


def _commands(plugins: Plugins) -> dict[str, tuple[list[list[Any]], bool]]:
    """Each plugin's ``harness`` commands ``[name, help, json_help]`` and whether it adds
    ``harness run`` (or ``harness serve``) options (a plugin whose ``register_commands`` fails
    adds none)."""
    from .command_registry import CommandSet, add_from_plugins

    found: dict[str, tuple[list[list[Any]], bool]] = {}
    for name in plugins.info:
        commands = CommandSet()
        add_from_plugins(commands, [(name, plugins.pm.get_plugin(name))])
        listed = [[c.name, c.help, c.json_help] for c in commands.commands.values()]
        found[name] = (listed, bool(commands.run_options or commands.serve_options))
    return found


def write(listing: Listing, distributions: list[list[Any]]) -> None:
    """Store ``listing``; never fails the command (a read-only home just means no cache)."""
    if any(row["broken"] for row in listing["plugins"]):
        # A plugin that failed to import left no module behind whose file we could watch, so
        # fixing it in place would go unnoticed: don't cache until every plugin loads.
        return
    sources = [stamp for path in _source_files() if (stamp := _file_stamp(path)) is not None]
    stored = {
        "format": FORMAT,
        "distributions": distributions,
        "sources": sources,
        "listing": listing,
    }
    write_json(cache_path(), stored)


def listing() -> Listing:
    """``{"harnesses": [...], "plugins": [rows]}``: from the cache when valid, else loaded (and
    cached)."""
    cached = read()
    if cached is not None:
        return cached
    distributions = distributions_fingerprint()  # before loading: a change meanwhile re-lists
    fresh = build()
    write(fresh, distributions)
    return fresh


def plugins_for(
    harness: str,
    sandbox: str | None = None,
    ledger: str | None = None,
    *,
    listed: Listing | None = None,
) -> Plugins:
    """The plugins a session of ``harness`` needs: the one registering it, the one providing the
    ``sandbox`` provider and the ``ledger`` URL's scheme if named, and every plugin that provides
    anything else (credential resolvers, host tools, observers, describe hooks) - not the other
    harness adapters, sandboxes and ledger stores with their dependencies. Without a valid cache,
    or for a name nothing registers (the error then lists them all), every plugin is loaded.

    ``listed``: what :func:`listing` answered moments ago in this process (the command line's
    parser asked it), so the installed distributions are not looked at twice."""
    from .plugin_manager import EntryPointRef, Plugins, get_plugins

    cached = read() if listed is None else listed
    providers = {p for row in (cached or {}).get("plugins", ()) for p in row["sandbox_providers"]}
    if (
        cached is None
        or harness not in cached["harnesses"]
        or (sandbox is not None and sandbox not in providers)
    ):
        listing()  # loads every plugin and refreshes the cache for the next run
        return get_plugins()
    scheme = ledger.split(":", 1)[0] if ledger and ":" in ledger else None
    needed = {
        row["name"]
        for row in cached["plugins"]
        if harness in row["harnesses"]
        or sandbox in row["sandbox_providers"]
        or scheme in row["ledger_schemes"]
        or not set(row["hooks"]) <= _NAMED_ONLY_HOOKS
    }
    # The entry points as listed: no scan of every installed distribution's metadata.
    refs = [EntryPointRef(*ep) for ep in cached["entry_points"] if ep[0] in needed]
    return Plugins(only=needed, entry_points=refs)
