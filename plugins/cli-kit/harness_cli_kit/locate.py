"""Finding a harness CLI and reading its version.

Search order: ``cli_path`` from the session config, then ``PATH``, then the directories named in
``HARNESS_CLI_PATH`` (``os.pathsep``-separated). That last one is how a test suite points at its
pinned CLIs; this module knows no checkout layout.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_hookspecs import HarnessError, SessionContext

#: Extra directories searched after ``PATH`` (set by a test suite, e.g. the pytest plugin).
CLI_PATH_ENV = "HARNESS_CLI_PATH"

_VERSION = re.compile(rb"(\d+\.\d+\.\d+)")
_cache: dict[tuple[str, float], str | None] = {}


def forget_versions() -> None:
    """Forget the versions this process asked (as a new process would; the file stays)."""
    _cache.clear()


#: Versions CLIs reported, kept across processes (``harness run`` is one process per turn, and
#: ``node cli --version`` costs 0.1-0.5 s): keyed by real path, mtime and size, so an upgraded
#: or replaced binary is asked again. Same directory as harness_core's plugin listing cache.
_VERSIONS_FILE = "cli-versions.json"


def extra_dirs() -> list[Path]:
    """The directories of ``HARNESS_CLI_PATH``, in order."""
    raw = os.environ.get(CLI_PATH_ENV, "")
    return [Path(part) for part in raw.split(os.pathsep) if part]


def find_cli(config: Mapping[str, Any], name: str) -> str | None:
    """``cli_path`` from the config, else ``PATH``, else ``HARNESS_CLI_PATH``; ``None``: absent."""
    configured = config.get("cli_path")
    if configured is not None:
        if not isinstance(configured, str) or not configured:
            raise HarnessError("invalid-request", "cli_path must be a non-empty string")
        path = shutil.which(configured) if os.sep not in configured else configured
        if path is None or not os.access(path, os.X_OK):
            return None
        return path
    found = shutil.which(name)
    if found is not None:
        return found
    for directory in extra_dirs():
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def not_found(name: str, config: Mapping[str, Any] | None = None, setting: str = "cli_path") -> str:
    """The hint of a CLI :func:`find_cli` did not find: the command, where it looked, and the
    config ``setting`` that names another one."""
    configured = (config or {}).get("cli_path")
    if isinstance(configured, str) and configured:
        return f"cli_path {configured[-160:]!r} is not an executable file"
    dirs = os.environ.get(CLI_PATH_ENV, "")
    where = f"{CLI_PATH_ENV}={dirs}" if dirs else f"{CLI_PATH_ENV} (not set)"
    text = f"{name[:60]} was not found on PATH or in {where}; install it or set {setting}"
    if len(text) > 240:  # a long HARNESS_CLI_PATH: keep the sentence, clip the list
        keep = 240 - (len(text) - len(dirs)) - 3
        text = text.replace(dirs, dirs[:keep] + "...")
    return text


def require_cli(name: str) -> str:
    """:func:`find_cli` without config, or ``provider-unavailable``."""
    path = find_cli({}, name)
    if path is None:
        raise HarnessError("provider-unavailable", not_found(name))
    return path


def command_of(config: Mapping[str, Any], default: list[str]) -> list[str]:
    """The ``command`` of the session config, else ``default``: an argv list, a JSON array of
    strings, or a shell-quoted string."""
    raw: Any = config.get("command", default)
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            raise HarnessError("invalid-request", "command is not valid JSON") from None
    elif isinstance(raw, str):
        raw = shlex.split(raw)
    if not isinstance(raw, list | tuple) or not raw or not all(isinstance(a, str) for a in raw):
        raise HarnessError("invalid-request", "command must be a string or a list of strings")
    return list(raw)


def located(argv: list[str], setting: str = "command") -> list[str]:
    """``argv`` with its program found as every CLI is (``PATH``, then ``HARNESS_CLI_PATH``); a
    program that is nowhere is ``provider-unavailable`` naming it and where it was looked for."""
    program = argv[0]
    if os.sep in program:  # a path (perhaps relative to the workspace): spawning checks it
        return argv
    path = find_cli({}, program)
    if path is None:
        raise HarnessError("provider-unavailable", not_found(program, setting=setting))
    return [path, *argv[1:]]


def located_command(config: Mapping[str, Any], default: str) -> list[str]:
    """:func:`command_of` (the config's ``command``, else ``default``), :func:`located`."""
    return located(command_of(config, [default]))


def parse_version(output: bytes) -> str | None:
    match = _VERSION.search(output)
    return match.group(1).decode() if match else None


def _key(path: str) -> tuple[str, float]:
    try:
        return (path, os.stat(path).st_mtime)
    except OSError:
        return (path, 0.0)


def _versions_path() -> str | None:
    try:  # the runtime's cache directory; without harness_core nothing is kept
        from harness_core.cache_files import cache_dir
    except ImportError:
        return None
    return os.path.join(cache_dir(), _VERSIONS_FILE)


def _stamp(path: str) -> str | None:
    """``realpath|mtime_ns|size`` of the binary (a symlinked npm bin: the file it runs)."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    return f"{real}|{st.st_mtime_ns}|{st.st_size}"


def _stored_versions() -> dict[str, str]:
    path = _versions_path()
    if path is None:
        return {}
    from harness_core.cache_files import read_json

    stored = read_json(path)
    return stored if isinstance(stored, dict) else {}


def stored_version(path: str) -> str | None:
    """The version this exact binary reported before (any process), or ``None``."""
    stamp = _stamp(path)
    version = _stored_versions().get(stamp) if stamp else None
    return version if isinstance(version, str) else None


def store_version(path: str, version: str) -> None:
    """Remember ``version`` for this binary; a cache that cannot be written is skipped."""
    stamp = _stamp(path)
    if stamp is None:
        return
    target = _versions_path()
    if target is None:
        return
    from harness_core.cache_files import write_json

    real = stamp.split("|")[0] + "|"
    stored = {  # not the binary's older stamps, nor binaries that are gone
        k: v
        for k, v in _stored_versions().items()
        if not k.startswith(real) and os.path.exists(k.split("|")[0])
    }
    stored[stamp] = version
    write_json(target, stored)


def version_sync(path: str) -> str | None:
    """``CLI --version`` for ``describe()`` (no session context there), cached per binary."""
    key = _key(path)
    if key not in _cache and (stored := stored_version(path)) is not None:
        _cache[key] = stored
    if key not in _cache:
        env = {k: os.environ[k] for k in ("PATH", "LANG", "TMPDIR") if k in os.environ}
        env["HOME"] = os.devnull  # no config is read for --version; never the host's
        try:
            done = subprocess.run(
                [path, "--version"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=20,
                env=env,
                start_new_session=True,
            )
            found = parse_version(done.stdout) if done.returncode == 0 else None
            _cache[key] = found
            if found is not None:
                store_version(path, found)
        except (OSError, subprocess.SubprocessError):
            _cache[key] = None
    return _cache[key]


async def version_via(context: SessionContext, path: str, env: Mapping[str, str]) -> str | None:
    """``CLI --version`` spawned through the session's sandbox, cached per binary."""
    key = _key(path)
    if key in _cache and _cache[key] is not None:
        return _cache[key]
    version = stored_version(path)
    if version is not None:
        _cache[key] = version
        return version
    process = await context.spawn([path, "--version"], env=env, lifetime="session")
    output = b"".join([line async for line in process.lines()])
    code = await process.wait()
    version = parse_version(output) if code == 0 else None
    if version is not None:
        _cache[key] = version
        store_version(path, version)
    return version


async def check_cli(context: SessionContext, binary: str, env: Mapping[str, str]) -> str:
    """The session's CLI (config, ``PATH``, test location), checked to report a version."""
    path = find_cli(context.config, binary)
    if path is None:
        raise HarnessError("provider-unavailable", not_found(binary, context.config))
    if await version_via(context, path, env) is None:
        raise HarnessError("provider-unavailable", f"the {binary} CLI did not report a version")
    return path


def cli_details(binary: str, tested: str) -> dict[str, str]:
    """Descriptor details: the tested release, the installed version and where it is."""
    path = find_cli({}, binary)
    version = version_sync(path) if path else None
    details = {"tested_cli": tested, "cli_version": version or "not found"}
    if path:
        details["cli_path"] = path[-128:]
    return details
