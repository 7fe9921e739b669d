#!/usr/bin/env python3
"""Mutation scores of the guard modules (mutmut 3, each module against the tests that target it).

Not part of CI: a full run takes tens of minutes of CPU. Usage (from the repository root, with
the project's venv set up by ``./dev setup``)::

    .venv/bin/python tools/mutation.py                  # every guard module, then the table
    .venv/bin/python tools/mutation.py redaction lineage
    .venv/bin/python tools/mutation.py --jobs 1 --keep budgets   # one worker; reuse earlier results
    .venv/bin/python tools/mutation.py --survivors lineage       # also print each survivor's diff
    .venv/bin/python tools/mutation.py --report                  # the table from the last runs
    .venv/bin/python tools/mutation.py command_policy --mutants '*_subcommand*'  # re-run these

Each module runs in its own scratch directory ``.mutation/<name>/`` (git-ignored): symlinks to the
module's package and to the selected test files, and a pyproject.toml that is the repository's
plus a ``[tool.mutmut]`` section. mutmut copies them into ``mutants/`` there and runs the tests
from that copy, so the working tree is never modified.

The score counts behaviour-changing mutants only. A survivor that changes an error message, or
that is equivalent to the original (no observable behaviour can tell them apart), is listed in
``tools/mutation-excluded.txt`` with the reason, and the table shows it as excluded rather than
killed. Mutants of functions the selected tests never call ("no tests") count as survivors.

mutmut 3 only mutates code inside functions: module-level regexes and constants (key shapes,
command rules, name patterns, bounds) are covered by tests that name each rule instead.

Two settings matter on this project's machines: ``process_isolation = "forkserver"`` (the fork
mode crashes when the test process is a child subreaper, as under the agent runtime), and
tests that reach real CLIs, servers or sandboxes are left out of the selections (a mutant's
tests run in-process against the copy in ``mutants/``; a subprocess would import the original).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / ".mutation"
EXCLUDED_FILE = ROOT / "tools" / "mutation-excluded.txt"
MUTMUT = "mutmut==3.8.1"
SPINNER = re.compile("[\u2800-\u28ff]")  # the braille frames of mutmut's progress spinner
PROGRESS = re.compile(r"(\d+)/(\d+) ")


@dataclass(frozen=True)
class Guard:
    """One module to mutate: its path in the repository, its import package, its tests."""

    path: str  # the module, relative to the repository root
    package: str  # repository path of the top-level import package that holds it
    tests: tuple[str, ...]  # pytest selections, relative to the repository root
    # Minimum score (behaviour-changing mutants killed) the issue asks for, in percent.
    target: float = 90.0

    @property
    def package_name(self) -> str:
        return Path(self.package).name

    @property
    def module_in_package(self) -> str:
        """The module's path as mutmut sees it (below the scratch directory)."""
        return str(Path(self.package_name) / Path(self.path).relative_to(self.package))


GUARDS: dict[str, Guard] = {
    "redaction": Guard(
        "harness_core/redaction.py",
        "harness_core",
        (
            "tests/security/test_redaction.py",
            "tests/security/test_canary.py",
            "plugins/credentials-env/tests/test_injection.py",
        ),
    ),
    "budgets": Guard(
        "harness_core/budgets.py",
        "harness_core",
        (
            "tests/approvals/test_budgets.py",
            "tests/approvals/test_policy_and_budget.py",
            "tests/approvals/test_controller_limits.py",
        ),
    ),
    "command_policy": Guard(
        "harness_core/command_policy.py",
        "harness_core",
        (
            "tests/approvals/test_command_policy.py",
            "tests/approvals/test_policy_and_budget.py",
            "tests/approvals/test_seam.py",
        ),
    ),
    "approvals": Guard(
        "harness_core/approvals.py",
        "harness_core",
        (
            "tests/approvals/test_seam.py",
            "tests/approvals/test_controller_limits.py",
            "tests/approvals/test_host_loop.py",
            "tests/approvals/test_tool_hooks.py",  # the before_tool hooks answer on this seam
        ),
    ),
    "lineage": Guard(
        "harness_core/lineage.py",
        "harness_core",
        (
            "tests/core/test_parent_event_id.py",
            "tests/core/test_structured_turns.py",
            "tests/approvals/test_host_loop.py",
        ),
    ),
    "ledger_sqlite": Guard(
        "harness_core/ledger/sqlite.py",
        "harness_core",
        (
            "tests/ledger/test_stores.py",
            "tests/ledger/test_ownership.py",
            "tests/ledger/test_tail.py",
            "tests/ledger/test_sqlite_claims.py",
            "tests/ledger/test_sqlite_open_check.py",
        ),
        target=80.0,
    ),
    "bounds": Guard(
        "hookspecs/harness_hookspecs/bounds.py",
        "hookspecs/harness_hookspecs",
        ("hookspecs/tests",),
    ),
}

#: mutmut's exit-code statuses, grouped the way the table counts them.
KILLED = {"killed", "caught by type check"}
TIMEOUT = {"timeout", "segfault"}
SURVIVED = {"survived", "no tests"}
#: The exit code of a fork-server child whose test run raised (mutmut lists it as "timeout"):
#: e.g. pytest could not find the node ids it was given (exit 4), as happens when pytest runs
#: a second time in one process. No verdict: neither a kill nor a survivor.
ERRORED = 255


@dataclass(frozen=True)
class Exclusion:
    """One line of mutation-excluded.txt: ``guard | function | regex | reason``."""

    guard: str
    function: str
    pattern: re.Pattern[str]
    reason: str


def load_exclusions() -> list[Exclusion]:
    exclusions = []
    for number, line in enumerate(EXCLUDED_FILE.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(" | ")]
        if len(parts) != 4 or not all(parts):
            sys.exit(f"{EXCLUDED_FILE.name}:{number}: want 'guard | function | regex | reason'")
        guard, function, pattern, reason = parts
        if guard not in GUARDS:
            sys.exit(f"{EXCLUDED_FILE.name}:{number}: unknown guard {guard!r}")
        exclusions.append(Exclusion(guard, function, re.compile(pattern), reason))
    return exclusions


def directory(selection: str) -> Path:
    """The directory of a pytest selection (a file, a file::test, or a directory)."""
    path = Path(selection.split("::")[0])
    return path if (ROOT / path).is_dir() else path.parent


def prepare(name: str, guard: Guard) -> Path:
    """The scratch directory of ``guard``: symlinks and a pyproject.toml with [tool.mutmut]."""
    work = SCRATCH / name
    work.mkdir(parents=True, exist_ok=True)
    # `tests` is a package (tests/helpers.py) the core's test files import from; a selection
    # elsewhere brings its whole directory (its conftest.py, its helpers).
    copied = sorted({str(directory(s)) for s in guard.tests if not s.startswith("tests/")})
    links = {guard.package_name: guard.package, "tests": "tests"}
    links.update((d, d) for d in copied)
    for link, target in links.items():
        path = work / link
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            continue
        path.symlink_to(ROOT / target, target_is_directory=(ROOT / target).is_dir())
    selections = list(guard.tests)
    config = "\n".join(
        [
            "",
            "[tool.mutmut]",
            f"source_paths = [{json.dumps(guard.package_name)}]",
            f"only_mutate = [{json.dumps(guard.module_in_package)}]",
            f"also_copy = {json.dumps(copied)}",
            f"pytest_add_cli_args_test_selection = {json.dumps(selections)}",
            # no output capture games: the tests use capsys/capfd themselves
            'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
            'process_isolation = "forkserver"',
            "use_git_change_detection = false",
            "",
        ]
    )
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + config)
    return work


def ensure_mutmut() -> None:
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print(f"installing {MUTMUT} into {sys.prefix}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", MUTMUT], check=True)


def run(name: str, guard: Guard, *, jobs: int, keep: bool, mutants: list[str]) -> None:
    """``mutants``: names or globs to (re-)run, the other results kept (a test added for a
    survivor: its mutant again, without the whole module)."""
    work = prepare(name, guard)
    if not keep and not mutants:
        shutil.rmtree(work / "mutants", ignore_errors=True)
    print(f"== {name}: {guard.path} against {' '.join(guard.tests)}", flush=True)
    env = dict(os.environ)
    env.pop("CI", None)  # mutants run a narrow selection: the CI strictness hook stays out of it
    with subprocess.Popen(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *mutants],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as mutmut:
        assert mutmut.stdout is not None
        for line in mutmut.stdout:
            # mutmut redraws a spinner line for a terminal; keep its last state only, and of
            # the progress counter ("12/165 ...") only the last
            line = SPINNER.split(line)[-1].strip() or line.strip()
            progress = PROGRESS.match(line)
            if progress is None or progress[1] == progress[2]:
                print(line, flush=True)
    if mutmut.returncode != 0:
        sys.exit(f"mutmut failed on {name} (exit {mutmut.returncode}); see the output above")


@dataclass
class Score:
    name: str
    guard: Guard
    mutants: int = 0
    killed: int = 0
    timeout: int = 0
    pending: int = 0
    errored: int = 0  # mutmut's child raised (exit 255): no verdict, re-check these
    survived: list[str] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (mutant, reason)
    diffs: dict[str, str] = field(default_factory=dict)

    @property
    def counted(self) -> int:
        return self.mutants - len(self.excluded) - self.pending - self.errored

    @property
    def percent(self) -> float:
        return 100.0 * (self.killed + self.timeout) / self.counted if self.counted else 0.0


def score(name: str, guard: Guard, exclusions: list[Exclusion]) -> Score | None:
    """Read mutmut's results for ``guard`` and apply the exclusions (from inside its scratch dir)."""
    work = SCRATCH / name
    meta = work / "mutants" / (guard.module_in_package + ".meta")
    if not meta.exists():
        return None
    cwd = Path.cwd()
    os.chdir(work)
    try:
        from mutmut.mutation.diff_apply import get_diff_for_mutant
        from mutmut.stats import status_by_exit_code

        result = Score(name, guard)
        exit_codes = json.loads(meta.read_text())["exit_code_by_key"]
        for mutant, code in sorted(exit_codes.items()):
            status = status_by_exit_code[code]
            result.mutants += 1
            if code == ERRORED:
                result.errored += 1
                continue
            if status in KILLED:
                result.killed += 1
                continue
            if status in TIMEOUT:
                result.timeout += 1
                continue
            if status == "not checked":  # a run under way, or stopped
                result.pending += 1
                continue
            diff = get_diff_for_mutant(mutant, path=guard.module_in_package)
            result.diffs[mutant] = f"# {mutant}: {status}\n{diff}"
            changed = "\n".join(
                line[1:].strip()
                for line in diff.splitlines()
                if line[:1] in "+-" and not line.startswith(("+++", "---"))
            )
            # harness_core.lineage.x_check_parent__mutmut_5, ...xǁLineageǁparent__mutmut_3
            mangled = mutant.split("__mutmut_")[0].rsplit(".", 1)[-1]
            function = mangled.removeprefix("x_").removeprefix("xǁ").replace("ǁ", ".")
            reason = next(
                (
                    e.reason
                    for e in exclusions
                    if e.guard == name
                    and e.function in (function, function.rsplit(".", 1)[-1], "*")
                    and e.pattern.search(changed)
                ),
                None,
            )
            if reason is not None:
                result.excluded.append((mutant, reason))
            else:
                result.survived.append(mutant)
        return result
    finally:
        os.chdir(cwd)


def table(scores: list[Score]) -> str:
    rows = [
        "| module | tests used | mutants | excluded | killed | timeout | survived | score | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        tests = ", ".join(Path(t).stem if t.endswith(".py") else t for t in s.guard.tests)
        rows.append(
            f"| `{s.guard.path}` | {tests} | {s.mutants} | {len(s.excluded)} | {s.killed} | "
            f"{s.timeout} | {len(s.survived)} | {s.percent:.1f} % | {s.guard.target:.0f} % |"
            + (f" ({s.pending} not checked yet)" if s.pending else "")
            + (f" ({s.errored} errored, no verdict: re-check)" if s.errored else "")
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("guards", nargs="*", help=f"default: all of {', '.join(GUARDS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutmut workers")
    parser.add_argument("--keep", action="store_true", help="reuse the results of an earlier run")
    parser.add_argument(
        "--mutants",
        nargs="+",
        default=[],
        metavar="NAME",
        help="re-run only these mutants (names or globs, as --survivors prints them); keeps the rest",
    )
    parser.add_argument("--report", action="store_true", help="print the table, run nothing")
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    parser.add_argument("--excluded", action="store_true", help="list the excluded mutants")
    args = parser.parse_args()
    names = args.guards or list(GUARDS)
    unknown = [name for name in names if name not in GUARDS]
    if unknown:
        parser.error(f"unknown guard {', '.join(unknown)} (known: {', '.join(GUARDS)})")
    ensure_mutmut()
    exclusions = load_exclusions()
    if not args.report:
        for name in names:
            run(name, GUARDS[name], jobs=args.jobs, keep=args.keep, mutants=args.mutants)
    scores = []
    for name in names:
        result = score(name, GUARDS[name], exclusions)
        if result is None:
            print(f"{name}: no results yet (run: tools/mutation.py {name})", file=sys.stderr)
        else:
            scores.append(result)
    for s in scores:
        if args.survivors and s.survived:
            print(f"\n== {s.name}: {len(s.survived)} survivors")
            for mutant in s.survived:
                print(s.diffs[mutant])
        if args.excluded and s.excluded:
            print(f"\n== {s.name}: {len(s.excluded)} excluded")
            for mutant, reason in s.excluded:
                print(f"{mutant}: {reason}")
    print()
    print(table(scores))
    below = [s.name for s in scores if s.percent < s.guard.target]
    if below:
        print(f"\nbelow target: {', '.join(below)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
