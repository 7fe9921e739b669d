"""The kit's entry points: run every check against one harness, from Python or the command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from harness_hookspecs import ConformanceProfile, LedgerStore

from ..controller import Controller
from ..plugin_manager import Plugins, plugins_from
from ..registry import as_adapter
from .approvals_phase import approvals_phase
from .branching_phase import branching_phase
from .check import Evidence
from .checks import ALL
from .probe import PROBE_NAME, Probe
from .process_resume import resume_in_new_process
from .processes import kill_leftovers
from .report import CheckResult, ConformanceReport
from .run import Run

#: A secret the kit places in the host environment only (nothing may copy it into a record).
CANARY_ENV_VAR = "HARNESS_CONFORMANCE_CANARY"


def judge(evidence: Evidence) -> list[CheckResult]:
    """Every registered check's verdict on what one run saw, in report order."""
    return [check(evidence) for check in ALL]


async def _enter_profile(stack: contextlib.AsyncExitStack, value: Any) -> ConformanceProfile | None:
    if value is None:
        return None
    if isinstance(value, ConformanceProfile):
        return value
    if hasattr(value, "__aenter__"):
        entered = await stack.enter_async_context(value)
    elif hasattr(value, "__enter__"):
        entered = stack.enter_context(value)
    else:
        raise TypeError("conformance_profile returned neither a profile nor a context manager")
    if not isinstance(entered, ConformanceProfile):
        raise TypeError("the conformance profile context did not yield a ConformanceProfile")
    return entered


async def arun_conformance(
    harness: str | Any,
    *,
    workspace: str | os.PathLike[str] | None = None,
    plugins: Plugins | None = None,
    timeout: float = 60.0,
    profile: ConformanceProfile | None = None,
    ledger: str | LedgerStore | None = None,
    controller_factory: Callable[..., Controller] | None = None,
) -> ConformanceReport:
    """Run the conformance kit (async form of :func:`run_conformance`)."""
    started = time.monotonic()
    name, plugins = _harness_and_plugins(harness, plugins)
    root = Path(tempfile.mkdtemp(prefix="harness-conformance-"))
    secret = "hc-canary-" + secrets.token_hex(16)
    env_secret = "hc-env-canary-" + secrets.token_hex(16)
    probe = Probe(secret)
    saved_env: dict[str, str | None] = {}
    stack = contextlib.AsyncExitStack()
    registered = False
    try:
        async with stack:
            if profile is None:
                answer = plugins.hook.conformance_profile(harness=name)
                if answer is None and name in plugins.harnesses:
                    answer = getattr(plugins.harnesses[name], "conformance_profile", None)
                    answer = answer() if callable(answer) else answer
                profile = await _enter_profile(stack, answer) or ConformanceProfile()
            if workspace is None:
                workspace = root / "workspace"
                workspace.mkdir()
            for key, value in {**profile.env, CANARY_ENV_VAR: env_secret}.items():
                saved_env[key] = os.environ.get(key)
                os.environ[key] = str(value)
            registered = plugins.register(probe, name=PROBE_NAME)
            if not registered:
                raise RuntimeError("the conformance probe could not be registered")
            run = Run(
                name=name,
                plugins=plugins,
                profile=profile,
                workspace=os.fspath(workspace),
                root=root,
                ledger=ledger if ledger is not None else f"sqlite:///{root}/ledger.sqlite",
                timeout=timeout,
                factory=controller_factory or Controller,
                probe=probe,
                env_secret=env_secret,
            )
            await run.first_controller()
            run.process_resume = await resume_in_new_process(run)
            await run.second_controller()
            await approvals_phase(run)
            await branching_phase(run)
            stored, read_error = run.read_back()
            checks = await anyio.to_thread.run_sync(judge, Evidence(run, stored, read_error))
    finally:
        for key, old in saved_env.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        if registered:
            plugins.unregister(PROBE_NAME)  # with it, its canary credential resolver
        kill_leftovers(probe.processes)
        shutil.rmtree(root, ignore_errors=True)
    return ConformanceReport(
        harness=name, checks=tuple(checks), duration=time.monotonic() - started
    )


def _harness_and_plugins(harness: str | Any, plugins: Plugins | None) -> tuple[str, Plugins]:
    """The harness's name and the plugins that hold it (``harness``: a name, an adapter or an
    ``@harness`` function, registered into ``plugins`` if they lack it)."""
    if isinstance(harness, str):
        return harness, plugins if plugins is not None else Plugins()
    adapter = as_adapter(harness)
    if adapter is None:
        raise TypeError("run_conformance needs a harness name, an adapter or an @harness function")
    if plugins is None:
        plugins = plugins_from([harness])
    elif adapter.name not in plugins.harnesses:
        plugins.register(harness)
    return adapter.name, plugins


def run_conformance(
    harness: str | Any,
    *,
    workspace: str | os.PathLike[str] | None = None,
    plugins: Plugins | None = None,
    timeout: float = 60.0,
    profile: ConformanceProfile | None = None,
    ledger: str | LedgerStore | None = None,
    controller_factory: Callable[..., Controller] | None = None,
) -> ConformanceReport:
    """Run every conformance check against ``harness`` and return the report.

    ``harness`` is a registered harness name (looked up in ``plugins``, by default a fresh
    :class:`Plugins` loading the installed entry points), an adapter object, or an ``@harness``
    function. ``workspace`` defaults to a temporary directory; ``timeout`` bounds each turn and
    each open/resume/close. ``profile`` overrides what the harness's ``conformance_profile`` hook
    answers. ``ledger`` defaults to a fresh SQLite file in a temporary directory (a URL, or a
    :class:`LedgerStore` object shared by both controllers). ``controller_factory`` builds the
    controllers (default :class:`Controller`), so a host's own control plane can be checked too.

    Sync; from async code use :func:`arun_conformance`. The run sets two variables in
    ``os.environ`` while it lasts (the host canary and the profile's ``env``): do not run two
    kits concurrently in one process.
    """
    result: ConformanceReport = anyio.run(
        lambda: arun_conformance(
            harness,
            workspace=workspace,
            plugins=plugins,
            timeout=timeout,
            profile=profile,
            ledger=ledger,
            controller_factory=controller_factory,
        )
    )
    return result


def cli_main(args: argparse.Namespace) -> int:
    """``harness conformance NAME [--json] [--workspace DIR] [--timeout S]``."""
    plugins = Plugins()
    name = str(args.name)
    if name not in plugins.harnesses:
        known = ", ".join(plugins.harness_names()) or "none installed"
        sys.stderr.write(f"harness: error: unknown harness {name!r} (known: {known})\n")
        return 2
    if not getattr(args, "json", False):
        sys.stderr.write(f"harness: running the conformance kit against {name}...\n")
    report = run_conformance(
        name,
        workspace=getattr(args, "workspace", None),
        plugins=plugins,
        timeout=float(getattr(args, "timeout", None) or 60.0),
    )
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.format_table() + "\n")
    return 0 if report.passed else 1
