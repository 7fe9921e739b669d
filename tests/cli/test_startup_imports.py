"""What ``harness run echo`` imports: only what a plain turn needs (issue 34's start-up).

The command policy's rules, the transcript's classes, configparser (entry-point lookups of
extensions), the checkpoint store and other harnesses' adapters each cost milliseconds of every
``harness run``; they load when a command is checked, a resume replays, an extension is looked
up, a checkpoint is taken or that harness runs, never before. (The time itself is measured by
``benchmarks/run.py --cli-overhead``: ``harness run echo / that floor``.)"""

from __future__ import annotations

import subprocess
import sys

#: Modules a plain ``harness run echo`` must not import.
NOT_AT_START = (
    "harness_core.command_policy",
    "harness_core.shell_words",
    "harness_core.transcript",
    "harness_core.delegation",
    "executor_temporal.connection",
    "executor_temporal.shapes",
    "configparser",
    "importlib.metadata",
    "harness_acp",
    "harness_codex",
    "harness_claude_code",
    "aiohttp",
    # the checkpoint store (and its setpriv look-up), a fork's code, the y/n approver of
    # --approve and harness steer's inbox: only when checkpointing, forking, asked or steered
    "harness_core.checkpoints",
    "harness_core.fork",
    "harness_core.cli.approve",
    "harness_core.cli.steer_inbox",
    # argparse imports it (with bz2, lzma) for the terminal's width; the CLI's parser asks it
    # without (harness_core.cli._terminal_columns)
    "shutil",
    # the read-only SQLite store: only to find a session to resume (a new one reads no ledger)
    "harness_core.ledger.sqlite_read",
    # the plugin listing's file name takes binascii's CRC-32
    "zlib",
    # a session's tool bridge (and the extensions' look-up): only for a session with host tools
    "harness_core.host_tools",
    "harness_core.extensions",
    # closing a session no process holds
    "harness_core.record_close",
)

PROBE = (
    "import sys, io, contextlib\n"
    "from harness_core.cli import _main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = _main(['run', 'echo', 'hi'])\n"
    "print(code, *sorted(m for m in sys.modules if m.split('.')[0] in {names}"
    " or m in {names}))\n"
)


def test_a_plain_run_imports_only_what_its_turn_needs(cli_env):
    roots = {name.split(".")[0] for name in NOT_AT_START} | set(NOT_AT_START)
    probe = PROBE.format(names=sorted(roots))
    # the first run lists the installed plugins (and imports them); the second reads that listing
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env, timeout=60
        )
    code, *loaded = out.stdout.split()
    assert code == "0", out.stderr
    assert not [m for m in loaded if m in NOT_AT_START or m.split(".")[0] in NOT_AT_START]


def test_the_command_policy_loads_with_the_first_check():
    code = (
        "import sys\n"
        "from harness_hookspecs import PermissionRequest\n"
        "from harness_core.approvals import Approvals, builtin_policy\n"
        "Approvals()\n"
        "assert 'harness_core.command_policy' not in sys.modules\n"
        "policy = builtin_policy()\n"
        "assert policy is builtin_policy()  # built once\n"
        "request = PermissionRequest.for_tool('Bash', kind='shell', command='rm -rf /')\n"
        "print(policy.verdict(request, '/tmp')[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "deny"


#: Frozen classes of the runtime a plain run builds; like the contract's, they take their
#: ``__repr__``/``__eq__``/``__hash__`` from ``harness_hookspecs.values.Value``.
RUNTIME_VALUES = (
    "harness_core.budgets.Budget",
    "harness_core.checkpoints.CheckpointSettings",
    "harness_core.cli.run.RunInvocation",
    "harness_core.plugin_manager.EntryPointRef",
    "harness_core.session_start.SessionFields",
    "harness_core.turn.TurnResult",
    "harness_core.turn_start.TurnOptions",
)

GENERATED = (
    "import io, contextlib, linecache\n"
    "from harness_core.cli import _main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = _main(['run', 'echo', 'hi'])\n"
    "import harness_core.checkpoints\n"  # (a run with --checkpoints builds its settings)
    "prefix = '<attrs generated methods '\n"
    "for name, entry in list(linecache.cache.items()):\n"
    "    if name.startswith(prefix):\n"
    "        defs = [l.split('(')[0][4:] for l in entry[2] if l.startswith('def ')]\n"
    "        print(name[len(prefix):].rstrip('>').split('>')[0], *defs)\n"
)


def test_a_plain_run_compiles_no_repr_eq_or_hash_for_the_value_classes(cli_env):
    """attrs compiles the methods it generates when a class is built (at import); the contract's
    classes and the runtime's frozen ones share written ones instead, so a run compiles only
    their ``__init__``."""
    out = subprocess.run(
        [sys.executable, "-c", GENERATED], capture_output=True, text=True, env=cli_env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    built = {line.split()[0]: set(line.split()[1:]) for line in out.stdout.splitlines()}
    contract = {name: defs for name, defs in built.items() if name.startswith("harness_hookspecs.")}
    # the run built them: attrs still generates their __init__ (SessionRef writes its own)
    assert sum("__init__" in defs for defs in contract.values()) >= 30
    values = {**contract, **{name: built[name] for name in RUNTIME_VALUES}}
    assert {name: defs & {"__repr__", "__eq__", "__hash__"} for name, defs in values.items()} == {
        name: set() for name in values
    }
