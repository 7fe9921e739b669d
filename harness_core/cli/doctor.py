"""``harness doctor``: what is installed here and whether it will work, in one table.

For every installed harness: the CLI it found (path, version, the version its adapter was tested
with) and which credential variables resolve for it - the names only, never a value. For every
sandbox provider: whether it works here, by provisioning a sandbox in a temporary directory,
running ``true`` inside it and finalizing it. ``--json`` prints one line per row.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .errors import EXIT_OK
from .output import Out, print_json

#: How long one sandbox provider may take to provision, run ``true`` and finalize.
SANDBOX_DEADLINE = 30.0


def cmd_doctor(args: argparse.Namespace) -> int:
    import anyio

    from ..plugins import get_plugins

    plugins = get_plugins()
    rows = anyio.run(_rows, plugins)
    if args.json:
        for row in rows:
            print_json(row)
        return EXIT_OK
    _show(rows)
    return EXIT_OK


async def _rows(plugins: Any) -> list[dict[str, Any]]:
    rows = [await harness_row(plugins, name) for name in plugins.harness_names()]
    for name in sorted(plugins.sandbox_providers):
        rows.append(await sandbox_row(plugins.sandbox_providers[name], name))
    return rows


async def harness_row(plugins: Any, name: str) -> dict[str, Any]:
    """One harness: its CLI (``None`` for a harness that needs none) and its credentials."""
    from harness_hookspecs import HarnessError

    from ..credentials import resolve_credentials

    row: dict[str, Any] = {"kind": "harness", "name": name}
    try:
        descriptor = plugins.describe(name)
    except Exception as error:  # a broken plugin is a row, not the end of the report
        reason = error.reason if isinstance(error, HarnessError) else type(error).__name__
        return {**row, "ok": False, "problem": f"describe failed ({reason})"}
    details = descriptor.details
    needs_cli = "cli_path" in details or "cli_version" in details
    found = details.get("cli_version") != "not found"
    row.update(
        cli_path=details.get("cli_path") if needs_cli else None,
        cli_version=(details.get("cli_version") if found else None) if needs_cli else None,
        tested=details.get("tested_cli") or details.get("tested_agent"),
    )
    try:
        credentials = await resolve_credentials(plugins.hook, descriptor, None, None)
        row["credentials"] = sorted(credentials)  # variable names: the values stay unread here
    except HarnessError as error:
        row["credentials"] = []
        row["credentials_problem"] = error.reason
    row["ok"] = not needs_cli or found
    if needs_cli and not found:
        row["problem"] = "CLI not found (PATH, HARNESS_CLI_PATH)"
    return row


async def sandbox_row(provider: Any, name: str) -> dict[str, Any]:
    """One sandbox provider: provisioned, ``true`` run inside, finalized - or why not."""
    import anyio
    from harness_hookspecs import HarnessError, SandboxRequest, SandboxSpec

    row: dict[str, Any] = {"kind": "sandbox", "name": name}
    with tempfile.TemporaryDirectory(prefix="harness-doctor-") as scratch:
        workspace, state = Path(scratch) / "workspace", Path(scratch) / "state"
        workspace.mkdir()
        state.mkdir()
        request = SandboxRequest(
            session_id="harness-doctor",
            harness="doctor",
            workspace=str(workspace),
            spec=SandboxSpec(provider=name),  # the default a session gets
            state_dir=str(state),
        )
        try:
            with anyio.fail_after(SANDBOX_DEADLINE):
                handle = await provider.provision(request)
                try:
                    code = await anyio.to_thread.run_sync(_run_true, handle, str(workspace))
                finally:
                    await provider.finalize(handle, "success")
        except HarnessError as error:
            return {**row, "ok": False, "problem": error.hint or error.reason}
        except TimeoutError:
            return {**row, "ok": False, "problem": f"no answer in {SANDBOX_DEADLINE:.0f}s"}
        except Exception as error:
            return {**row, "ok": False, "problem": f"failed ({type(error).__name__})"}
    if code != 0:
        return {**row, "ok": False, "problem": f"true exited {code} inside it"}
    return {**row, "ok": True}


def _run_true(handle: Any, workspace: str) -> int:
    import os

    env = {"PATH": os.environ.get("PATH", os.defpath), **dict(handle.env)}
    done = subprocess.run(
        [*handle.command_prefix, "true"],
        cwd=handle.workspace or workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SANDBOX_DEADLINE,
    )
    return done.returncode


def _show(rows: list[dict[str, Any]]) -> None:
    out = Out()
    harnesses = [r for r in rows if r["kind"] == "harness"]
    table = []
    for row in harnesses:
        if "problem" in row and "cli_path" not in row:
            cli = row["problem"]
        elif row.get("cli_path"):
            cli = row["cli_path"]
        elif row.get("problem"):
            cli = "not found"
        else:
            cli = "- (none needed)"
        credentials = ", ".join(row.get("credentials") or []) or "none"
        if row.get("credentials_problem"):
            credentials = f"error ({row['credentials_problem']})"
        table.append(
            [
                row["name"],
                "ok" if row["ok"] else "MISSING",
                cli,
                row.get("cli_version") or "-",
                row.get("tested") or "-",
                credentials,
            ]
        )
    out.table(["HARNESS", "STATUS", "CLI", "VERSION", "TESTED WITH", "CREDENTIALS"], table)
    sandboxes = [r for r in rows if r["kind"] == "sandbox"]
    if sandboxes:
        out.line()
        out.table(
            ["SANDBOX", "STATUS", "DETAIL"],
            [
                [r["name"], "works" if r["ok"] else "FAILS", r.get("problem") or "-"]
                for r in sandboxes
            ],
        )
    missing = [r["name"] for r in harnesses if not r["ok"]]
    if missing:
        print(f"{len(missing)} harness(es) cannot run here: {', '.join(missing)}", file=sys.stderr)
