"""`harness new` and the cookiecutter template: every kind generates a project that installs,
registers through its entry point, and passes its own tests unedited (harnesses: conformance too).

Installation never touches the test venv: each project is installed with
``pip install --no-deps --target SITE`` and only subprocesses see it (``PYTHONPATH=SITE``, whose
dist-info carries the entry point). SITE is deleted afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness_core import scaffold
from harness_core.cli import main as harness_main
from harness_core.conformance import CHECK_NAMES

from ..helpers import ROOT, harness_cmd

pytest.importorskip("cookiecutter")


KINDS = ("harness", "harness-cli", "sandbox", "credentials")
NAMES = {
    "harness": "scaffold-fn",
    "harness-cli": "scaffold-cli",
    "sandbox": "scaffold-box",
    "credentials": "scaffold-vault",
}
DISTS = {
    "harness": "harnessplane-scaffold-fn",
    "harness-cli": "harnessplane-scaffold-cli",
    "sandbox": "harnessplane-sandbox-scaffold-box",
    "credentials": "harnessplane-credentials-scaffold-vault",
}
# Import names keep the bundled plugins' form (harnessplane-pi imports as harness_pi).
PACKAGES = {
    "harness": "harness_scaffold_fn",
    "harness-cli": "harness_scaffold_cli",
    "sandbox": "sandbox_scaffold_box",
    "credentials": "credentials_scaffold_vault",
}
COMMON = {
    "pyproject.toml",
    "README.md",
    ".gitignore",
    ".github/workflows/ci.yml",
    "{pkg}/__init__.py",
    "{pkg}/py.typed",
}
OWN = {
    "harness": {"{pkg}/harness.py", "tests/test_harness.py", "tests/test_conformance.py"},
    "harness-cli": {
        "{pkg}/adapter.py",
        "{pkg}/fake_agent.py",
        "{pkg}/plugin.py",
        "tests/test_adapter.py",
        "tests/test_conformance.py",
    },
    "sandbox": {"{pkg}/provider.py", "{pkg}/plugin.py", "tests/test_sandbox.py"},
    "credentials": {"{pkg}/resolver.py", "{pkg}/plugin.py", "tests/test_credentials.py"},
}


def run(argv, *, cwd=None, env=None, timeout=300):
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


class Generated:
    def __init__(self, kind: str, project: Path, site: Path, env: dict[str, str]) -> None:
        self.kind = kind
        self.name = NAMES[kind]
        self.dist = DISTS[kind]
        self.project = project
        self.site = site
        self.env = env
        self.tree: set[str] = set()


@pytest.fixture(scope="module", params=KINDS)
def generated(request, tmp_path_factory):
    """Generate one kind with `harness new`, install it into a throwaway --target directory."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"scaffold-{kind}")
    out = root / "out"
    code = harness_main(
        [
            "new",
            "--kind",
            kind,
            "--name",
            NAMES[kind],
            "--description",
            f"A generated {kind} plugin",
            "--author",
            "Test Author",
            "--output-dir",
            str(out),
            "--no-input",
        ]
    )
    assert code == 0
    project = out / DISTS[kind]
    tree = {p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()}
    site = root / "site"
    installed = run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(project),
        ]
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["HARNESS_LEDGER"] = f"sqlite:///{root}/ledger.sqlite"
    env["HARNESS_STATE_DIR"] = str(root / "state")
    env.pop("HARNESS_CORE_PLUGINS", None)
    env.pop("PYTEST_ADDOPTS", None)
    generated = Generated(kind, project, site, env)
    generated.tree = tree  # as generated, before the build left build/ and *.egg-info
    yield generated
    shutil.rmtree(site, ignore_errors=True)  # the "uninstall": nothing else was touched


def test_the_tree_holds_exactly_the_kinds_files(generated):
    pkg = PACKAGES[generated.kind]
    files = generated.tree
    assert files == {f.format(pkg=pkg) for f in COMMON | OWN[generated.kind]}
    pyproject = (generated.project / "pyproject.toml").read_text()
    assert "[project.entry-points.harness_core]" in pyproject
    assert f'name = "{generated.dist}"' in pyproject
    assert "A generated" in pyproject and "Test Author" in pyproject
    rendered = [f for f in files if not f.startswith(".github/")]
    assert "{{" not in "".join((generated.project / f).read_text() for f in rendered)
    assert (
        "${{ matrix.python-version }}"
        in (generated.project / ".github/workflows/ci.yml").read_text()
    )


def test_the_generated_code_is_lint_clean(generated):
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed")
    for argv in ([str(ruff), "check", "."], [str(ruff), "format", "--check", "."]):
        result = run(argv, cwd=generated.project)
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_installed_plugin_is_listed(generated):
    result = run([*harness_cmd(), "plugins", "--json"], env=generated.env)
    assert result.returncode == 0, result.stderr
    listing = [json.loads(line) for line in result.stdout.splitlines()]  # JSON Lines
    assert not [b for b in listing if b["broken"] and b["name"] == generated.dist]
    (info,) = [p for p in listing if p["name"] == generated.dist]
    assert info["distribution"] == generated.dist and info["version"] == "0.1.0"
    registry = {
        "harness": "harnesses",
        "harness-cli": "harnesses",
        "sandbox": "sandbox_providers",
        "credentials": "credential_resolvers",
    }[generated.kind]
    assert info[registry] == [generated.name]
    # The test venv itself is untouched: without the --target directory it is not there.
    plain = run([*harness_cmd(), "plugins", "--json"], env={**generated.env, "PYTHONPATH": ""})
    assert generated.dist not in {json.loads(line)["name"] for line in plain.stdout.splitlines()}


def test_the_generated_test_suite_passes_unedited(generated):
    result = run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider"],
        cwd=generated.project,
        env=generated.env,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    conformance = [line for line in lines if "test_conformance.py::test_conformance[" in line]
    # the one skip: approvals, which a harness that cannot ask the host has nothing of
    skipped = [line for line in lines if " SKIPPED" in line]
    assert skipped == [line for line in conformance if "[approvals]" in line]
    assert not [line for line in lines if " FAILED" in line]
    if generated.kind.startswith("harness"):
        # one test per conformance check, all run against the installed harness
        assert len(conformance) == len(CHECK_NAMES)
        assert all("PASSED" in line for line in conformance if "[approvals]" not in line)
    else:
        assert conformance == []


@pytest.mark.parametrize("generated", ["harness", "harness-cli"], indirect=True)
def test_harness_conformance_passes_right_after_install(generated):
    result = run([*harness_cmd(), "conformance", generated.name], env=generated.env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASS") == len(CHECK_NAMES) - 1 and "FAIL" not in result.stdout
    assert result.stdout.count("SKIP  approvals") == 1


#: What breaks each kind's generated plugin, and the check that must then fail.
BREAKS = {
    # finalize forgets the scratch directory it made
    "sandbox": (
        "provider.py",
        "shutil.rmtree(handle.state, ignore_errors=True)",
        "pass",
        "cleanup",
    ),
    # every credential claims a grant to another agent
    "credentials": (
        "resolver.py",
        "priority=10,",
        "priority=10, agent='someone-else',",
        "grant-scope",
    ),
}


def plugin_env(generated):
    """The generated plugin's environment; the credentials one gets a value to resolve."""
    env = dict(generated.env)
    if generated.kind == "credentials":
        resolver = (generated.project / PACKAGES["credentials"] / "resolver.py").read_text()
        prefix = re.search(r'PREFIX = "([A-Z0-9_]+_)"', resolver).group(1)
        env[prefix + "PROBE_TOKEN"] = "sk-kit-secret-0123456789abcdef"
    return env


@pytest.mark.parametrize("generated", ["sandbox", "credentials"], indirect=True)
def test_sandbox_and_credentials_conformance_pass_and_a_broken_one_fails(generated, tmp_path):
    env = plugin_env(generated)
    result = run([*harness_cmd(), "conformance", generated.name], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.split() for line in result.stdout.splitlines() if line.startswith("  ")]
    marks = {words[1]: words[0] for words in lines}
    expected = (
        ["provision", "runs-in-workspace", "isolation", "network-none", "cleanup"]
        if generated.kind == "sandbox"
        else ["resolve", "grant-scope", "redaction"]
    )
    assert list(marks) == expected
    assert set(marks.values()) == {"PASS"}, result.stdout  # the template isolates and redacts
    # the same plugin, broken: its check fails, and the command says so
    file, old, new, check = BREAKS[generated.kind]
    broken_site = tmp_path / "site"
    shutil.copytree(generated.site, broken_site)
    source = broken_site / PACKAGES[generated.kind] / file
    assert old in source.read_text()
    source.write_text(source.read_text().replace(old, new))
    env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(generated.site), str(broken_site), 1)
    broken = run([*harness_cmd(), "conformance", generated.name], env=env)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    failed = [
        words[1]
        for words in (line.split() for line in broken.stdout.splitlines())
        if words[:1] == ["FAIL"]
    ]
    # (the credentials one also reaches no session: the runtime keeps another agent's grant)
    assert check in failed, broken.stdout


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["Bad", "my_plugin", "1st", "-x", "a--b", "trailing-", "über", "has space", "x" * 65]
)
def test_an_invalid_name_is_one_clear_line(name, tmp_path, capsys):
    code = harness_main(
        ["new", "--kind", "harness", f"--name={name}", "--output-dir", str(tmp_path), "--no-input"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("harness: error: invalid plugin name") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_one_clear_line(tmp_path, capsys):
    argv = [
        "new",
        "--kind",
        "sandbox",
        "--name",
        "twice",
        "--output-dir",
        str(tmp_path),
        "--no-input",
    ]
    assert harness_main(argv) == 0
    marker = tmp_path / "harnessplane-sandbox-twice" / "README.md"
    marker.write_text("mine")
    capsys.readouterr()
    assert harness_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness: error: ") and "already exists" in err and err.count("\n") == 1
    assert marker.read_text() == "mine"


def test_cli_subprocess_reports_errors_on_stderr_with_nonzero_exit(tmp_path):
    result = run(
        [*harness_cmd(), "new", "--kind", "harness", "--name", "Nope!", "--no-input"],
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("harness: error: invalid plugin name 'Nope!'")
    assert result.stdout == ""


def test_the_template_hook_rejects_bad_names_for_plain_cookiecutter(tmp_path):
    from cookiecutter.exceptions import FailedHookException
    from cookiecutter.main import cookiecutter

    with pytest.raises(FailedHookException):
        cookiecutter(
            str(ROOT / "cookiecutter-template"),
            no_input=True,
            extra_context={"plugin_name": "Bad Name", "kind": "harness"},
            output_dir=str(tmp_path),
        )
    assert list(tmp_path.iterdir()) == []


def test_plain_cookiecutter_generates_from_the_repository_path(tmp_path):
    from cookiecutter.main import cookiecutter

    created = cookiecutter(
        str(ROOT / "cookiecutter-template"),
        no_input=True,
        extra_context={"plugin_name": "plain", "kind": "credentials"},
        output_dir=str(tmp_path),
    )
    assert Path(created).name == "harnessplane-credentials-plain"
    assert (Path(created) / "credentials_plain" / "resolver.py").is_file()
    assert not (Path(created) / "tests" / "test_conformance.py").exists()


def test_the_template_ships_in_the_wheel(tmp_path):
    """A non-editable install finds the template: it is package data of harness_core."""
    assert scaffold.template_dir().is_relative_to(ROOT / "harness_core")
    assert (ROOT / "cookiecutter-template").resolve() == scaffold.template_dir().resolve()
    # Build from a copy: an in-tree build would write build/ into the shared checkout.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT / "harness_core",
        source / "harness_core",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    dist = tmp_path / "dist"
    built = run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)]
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = dist.glob("harnessplane-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    template = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "harness_core" / "template").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert template and template <= names, sorted(template - names)


def test_an_interactive_bad_name_is_said_at_once_and_asked_again(tmp_path):
    # answers: a bad name, a good one, kind (1 = harness), description, author
    result = subprocess.run(
        [*harness_cmd(), "new", "--output-dir", str(tmp_path)],
        input="My Plugin\nreview-bot\n1\n\n\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    # said right after the first answer, before the kind is asked
    bad = result.stderr.index("invalid plugin name 'My Plugin'")
    assert bad < result.stderr.index("Plugin name", bad) < result.stderr.index("Kind of plugin")
    assert result.stdout == f"{tmp_path / 'harnessplane-review-bot'}\n"


def test_a_name_clashing_with_an_installed_distribution_is_refused(tmp_path):
    flags = ["new", "--kind", "harness", "--output-dir", str(tmp_path)]
    given = run([*harness_cmd(), *flags, "--name", "echo", "--no-input"], cwd=tmp_path)
    assert given.returncode == 2
    assert given.stderr == (
        "harness: error: invalid plugin name 'echo': harnessplane-echo is an installed "
        "distribution; choose another name\n"
    )
    asked = subprocess.run(
        [*harness_cmd(), *flags],
        input="echo\necho-two\n\n\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert asked.returncode == 0, asked.stderr
    assert "harnessplane-echo is an installed distribution" in asked.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["harnessplane-echo-two"]


def test_interactive_answers_generate_the_project(tmp_path):
    result = subprocess.run(
        [*harness_cmd(), "new", "--output-dir", str(tmp_path)],
        input="review-bot\n2\nReviews diffs\nAda\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    project = tmp_path / "harnessplane-review-bot"
    assert (project / "harness_review_bot" / "adapter.py").is_file()
    assert 'description = "Reviews diffs"' in (project / "pyproject.toml").read_text()
