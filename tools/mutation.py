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
    .venv/bin/python tools/mutation.py --recheck ledger_sqlite   # verdicts mutmut did not give

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
import contextlib
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
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


def collect(
    cwd: Path, selections: list[str], env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    """Node ids pytest collects for ``selections`` (run in ``cwd``, a fresh process)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *selections],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    return done.returncode, ids


def check_addressable(name: str, guard: Guard) -> None:
    """Refuse a selection with test ids pytest escaped.

    mutmut runs a mutant against the node ids of the tests that reached its function, in a
    child of its fork server. pytest escapes a backslash, a newline or a non-ASCII character
    in a parametrized id (``[\\rm -rf /]``); given back there, such an id matches no test
    (seen with pytest 9.2 and mutmut 3.8.1, though a fresh ``python -m pytest`` finds it):
    pytest exits 4, the child raises, and every mutant of a function that test reaches ends
    with exit 255, no verdict. Found before the run, the test's ``ids=`` can be made plain.
    """
    work = prepare(name, guard)
    code, ids = collect(work, list(guard.tests))
    if code != 0:
        sys.exit(f"{name}: pytest cannot collect {' '.join(guard.tests)} (exit {code})")
    escaped = [test for test in ids if "\\" in test]
    if escaped:
        sys.exit(
            f"{name}: {len(escaped)} test id(s) escaped by pytest, which mutmut cannot select "
            "again (their mutants would get no verdict); give the tests plain ids=: "
            + ", ".join(escaped[:5])
        )


#: The exit code recorded for a mutant whose tests stopped making progress (a hang): mutmut's
#: own code for "timeout", which counts as a kill, as mutmut counts its CPU-time limit.
TIMED_OUT = 36
FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?: - .*)?$")


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def run_one(
    mutants_dir: Path, mutant: str, tests: list[str], *, stall: float, limit: float
) -> tuple[int, str, float]:
    """Run ``tests`` against ``mutant`` in a fresh pytest process: (exit code, failing test,
    seconds). The process (and everything it started) is killed when no test has finished for
    ``stall`` seconds or the whole run passes ``limit``: the mutant is then a timeout."""
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant)
    env.pop("CI", None)
    args = ["-x", "-v", "--tb=no", "-p", "no:randomly", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    with subprocess.Popen(
        [sys.executable, "-m", "pytest", "--rootdir=.", *args],
        cwd=mutants_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    ) as process:
        assert process.stdout is not None
        lines: list[str] = []
        progress = [time.monotonic()]

        def read() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                lines.append(raw.decode(errors="replace").rstrip())
                progress[0] = time.monotonic()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        timed_out = False
        while process.poll() is None:
            now = time.monotonic()
            if now - progress[0] > stall or now - started > limit:
                timed_out = True
                for pid in [process.pid, *descendants(process.pid)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
        process.wait()
        reader.join(timeout=5)
    failed = next((m[1] for line in lines if (m := FAILED_TEST.match(line))), "")
    seconds = time.monotonic() - started
    if timed_out:
        return TIMED_OUT, next((line for line in reversed(lines) if "::" in line), ""), seconds
    return process.returncode, failed, seconds


def recheck(name: str, guard: Guard, *, patterns: list[str], stall_factor: float) -> None:
    """Give a verdict to each mutant mutmut left without one (not checked, or errored), or to
    those ``patterns`` name: one fresh pytest process per mutant, in the guard's ``mutants/``.

    For a module whose tests take long, or whose mutants hang (a writer thread that never
    wakes waits for mutmut's CPU-time limit, which a sleeping process never reaches). Each
    mutant runs the tests mutmut maps to its function (plus tests newer than mutmut's stats),
    with ``-x``, the tests that killed this function's other mutants first, so a kill ends
    fast. A run in which no test finishes for ``stall_factor`` times the slowest test's
    recorded time (at least 30 s) is killed with its process tree and counted a timeout.
    The verdicts go into mutmut's results (the ``.meta`` file), which ``--report`` reads.
    """
    work = SCRATCH / name
    mutants_dir = work / "mutants"
    meta_path = mutants_dir / (guard.module_in_package + ".meta")
    if not meta_path.exists():
        sys.exit(f"{name}: no mutmut results to complete (run: tools/mutation.py {name})")
    meta = json.loads(meta_path.read_text())
    stale = stale_functions(work, guard, meta)
    if stale:
        sys.exit(
            f"{name}: {guard.path} changed since mutmut made its mutants ({', '.join(stale)}); "
            f"run tools/mutation.py --keep {name} first (it re-mutates the changed functions)"
        )
    refresh_copies(work, guard)
    stats = json.loads((mutants_dir / "mutmut-stats.json").read_text())
    by_function: dict[str, list[str]] = stats["tests_by_mangled_function_name"]
    duration: dict[str, float] = stats["duration_by_test"]
    code, collected = collect(
        mutants_dir, list(guard.tests), env=dict(os.environ, MUTANT_UNDER_TEST="")
    )
    if code != 0:
        sys.exit(f"{name}: pytest cannot collect {' '.join(guard.tests)} in {mutants_dir}")
    newer = [test for test in collected if test not in duration]  # unknown reach: run them
    codes: dict[str, int | None] = meta["exit_code_by_key"]
    if patterns:
        chosen = [m for m in codes if any(fnmatch.fnmatchcase(m, p) for p in patterns)]
    else:
        chosen = [m for m, c in codes.items() if c is None or c == ERRORED]
    if not chosen:
        print(f"{name}: every mutant has a verdict")
        return
    # a mutant that raises at every call must fail a test, or the copy is not what runs
    reaching = sorted({t for tests in by_function.values() for t in tests}, key=duration.get)[:1]
    sanity, failed, _ = run_one(mutants_dir, "fail", reaching, stall=120, limit=300)
    if sanity != 1:
        sys.exit(f"{name}: MUTANT_UNDER_TEST=fail passed {reaching}: the mutants are not in use")
    kills: dict[str, dict[str, int]] = {}
    print(f"== {name}: {len(chosen)} mutants, one pytest process each", flush=True)
    for number, mutant in enumerate(sorted(chosen), 1):
        function = mutant.split("__mutmut_")[0]
        mapped = [t for t in by_function.get(function, []) if t in collected or t in duration]
        if not mapped and not newer:
            codes[mutant] = 33  # mutmut's "no tests"
            write_meta(meta_path, meta)
            continue
        killers = kills.setdefault(function, {})
        ordered = sorted(mapped, key=lambda t: (-killers.get(t, 0), duration.get(t, 0.0)))
        tests = ordered + newer
        slowest = max([duration.get(t, 1.0) for t in tests] or [1.0])
        estimate = sum(duration.get(t, 1.0) for t in tests)
        exit_code, failed, seconds = run_one(
            mutants_dir,
            mutant,
            tests,
            stall=max(30.0, stall_factor * slowest),
            limit=60.0 + stall_factor * estimate,
        )
        if exit_code in (2, 4):  # interrupted, or pytest refused the arguments: no verdict
            print(
                f"{number}/{len(chosen)} {mutant}: pytest exit {exit_code}, left without a verdict"
            )
            continue
        if failed:
            killers[failed] = killers.get(failed, 0) + 1
        codes[mutant] = exit_code
        write_meta(meta_path, meta)
        from mutmut.stats import status_by_exit_code

        print(
            f"{number}/{len(chosen)} {mutant}: {status_by_exit_code[exit_code]} "
            f"({seconds:.0f} s{', by ' + failed if failed else ''})",
            flush=True,
        )


def write_meta(path: Path, meta: dict[str, object]) -> None:
    """mutmut's results file, replaced whole (an interrupted write leaves the old one)."""
    partial = path.with_suffix(".meta.partial")
    partial.write_text(json.dumps(meta, indent=4))
    partial.replace(path)


def stale_functions(work: Path, guard: Guard, meta: dict[str, object]) -> list[str]:
    """Functions of the module whose code differs from what mutmut mutated (their mutants'
    verdicts would be about other code)."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    source = (ROOT / guard.path).read_text()
    cwd = Path.cwd()
    os.chdir(work)
    try:
        current = mutate_file_contents(guard.module_in_package, source).hash_by_function_name
    finally:
        os.chdir(cwd)
    recorded = meta["hash_by_function_name"]
    assert isinstance(recorded, dict)
    return sorted(f for f in set(current) | set(recorded) if current.get(f) != recorded.get(f))


def refresh_copies(work: Path, guard: Guard) -> None:
    """Bring the unmutated files of ``mutants/`` (the package's other modules, the tests) up
    to the working tree's, as ``mutmut run`` would; the mutated module stays."""
    mutated = work / "mutants" / guard.module_in_package
    links = [p for p in work.rglob("*") if p.is_symlink() and "mutants" not in p.parts]
    for link in sorted(links):
        source_root = link.resolve()
        for source in source_root.rglob("*"):
            if "__pycache__" in source.parts or not source.is_file():
                continue
            target = work / "mutants" / link.relative_to(work) / source.relative_to(source_root)
            if target == mutated or target.suffix in (".meta", ".spans"):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_bytes() != source.read_bytes():
                shutil.copy2(source, target)


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
        "| module | tests used | mutants | excluded | killed | timeout | survived | errored "
        "| no verdict | score | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        tests = ", ".join(Path(t).stem if t.endswith(".py") else t for t in s.guard.tests)
        rows.append(
            f"| `{s.guard.path}` | {tests} | {s.mutants} | {len(s.excluded)} | {s.killed} | "
            f"{s.timeout} | {len(s.survived)} | {s.errored} | {s.pending} | {s.percent:.1f} % | "
            f"{s.guard.target:.0f} % |"
        )
    if any(s.errored or s.pending for s in scores):
        rows.append(
            "\nerrored: mutmut's child raised (exit 255), no verdict; no verdict: not checked yet. "
            "Both are left out of the score: give them one with --recheck."
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
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="instead of mutmut: one fresh pytest process per mutant without a verdict (or per "
        "--mutants), killed when its tests stop progressing; records the verdicts",
    )
    parser.add_argument(
        "--stall-factor",
        type=float,
        default=15.0,
        help="--recheck: a mutant is a timeout when no test finishes for this many times the "
        "slowest test's recorded time (at least 30 s); default 15, mutmut's multiplier",
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
    if args.recheck:
        for name in names:
            recheck(name, GUARDS[name], patterns=args.mutants, stall_factor=args.stall_factor)
    elif not args.report:
        for name in names:
            check_addressable(name, GUARDS[name])
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
