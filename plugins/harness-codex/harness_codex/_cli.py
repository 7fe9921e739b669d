"""Finding the CLI binary and reading its version (shared shape with harness-claude-code)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_hookspecs import HarnessError, SessionContext

_VERSION = re.compile(rb"(\d+\.\d+\.\d+)")
_cache: dict[tuple[str, float], str | None] = {}


def project_bin(name: str) -> Path | None:
    """The pinned CLI in the project's ``tools/npm/node_modules/.bin``, when this is a checkout."""
    for base in Path(__file__).resolve().parents:
        candidate = base / "tools" / "npm" / "node_modules" / ".bin" / name
        if candidate.exists():
            return candidate
        if (base / ".git").exists():
            break
    return None


def find_cli(config: Mapping[str, Any], name: str) -> str | None:
    """``cli_path`` from the config, else ``PATH``, else the project's ``tools/npm``."""
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
    candidate = project_bin(name)
    return str(candidate) if candidate is not None else None


def parse_version(output: bytes) -> str | None:
    match = _VERSION.search(output)
    return match.group(1).decode() if match else None


def _key(path: str) -> tuple[str, float]:
    try:
        return (path, os.stat(path).st_mtime)
    except OSError:
        return (path, 0.0)


def version_sync(path: str) -> str | None:
    """``CLI --version`` for ``describe()`` (no session context there), cached per binary."""
    key = _key(path)
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
            _cache[key] = parse_version(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            _cache[key] = None
    return _cache[key]


async def version_via(context: SessionContext, path: str, env: Mapping[str, str]) -> str | None:
    """``CLI --version`` spawned through the session's sandbox, cached per binary."""
    key = _key(path)
    if key in _cache and _cache[key] is not None:
        return _cache[key]
    process = await context.spawn([path, "--version"], env=env, lifetime="session")
    output = b"".join([line async for line in process.lines()])
    code = await process.wait()
    version = parse_version(output) if code == 0 else None
    if version is not None:
        _cache[key] = version
    return version
