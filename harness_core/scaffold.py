"""``harness new``: scaffold a plugin from the bundled cookiecutter template.

The template ships *inside* the package (``harness_core/template``, package data), so it is found
the same way in an editable checkout and in a wheel install; ``cookiecutter-template`` at the
repository root is a symlink to it, so ``cookiecutter path/to/checkout/cookiecutter-template``
works too. Cookiecutter is imported only here (the ``scaffold`` extra).
"""

from __future__ import annotations

import argparse
import keyword
import logging
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

KINDS = ("harness", "harness-cli", "sandbox", "credentials")
PREFIXES = {"harness": "harness-", "harness-cli": "harness-", "sandbox": "sandbox-"}
# Keep in step with hooks/pre_gen_project.py (the template validates too, for plain cookiecutter).
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
RESERVED = {"harness_core", "harness_hookspecs", "test", "tests", "pytest"}
EXIT_USAGE = 2


class ScaffoldError(Exception):
    """A one-line error for the user."""


def template_dir() -> Path:
    """The bundled template directory (contains ``cookiecutter.json``)."""
    path = Path(str(resources.files("harness_core") / "template"))
    if not (path / "cookiecutter.json").is_file():
        raise ScaffoldError(f"the bundled template is missing ({path})")
    return path


def base_name(name: str, kind: str) -> str:
    """``harness-NAME``, ``sandbox-NAME`` or ``credentials-NAME``: the base of the package name."""
    prefix = PREFIXES.get(kind, "credentials-")
    return name if name.startswith(prefix) else prefix + name


def distribution_name(name: str, kind: str) -> str:
    """The family name on the package index (and the project directory), as the bundled plugins:
    ``harnessplane-NAME`` for harnesses, ``harnessplane-sandbox-NAME``, ``harnessplane-credentials-NAME``."""
    return "harnessplane-" + base_name(name, kind).removeprefix("harness-")


def package_name(name: str, kind: str) -> str:
    return base_name(name, kind).replace("-", "_")


def check_name(name: str, kind: str) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` makes valid plugin, distribution and package names."""
    if kind not in KINDS:
        raise ScaffoldError(f"invalid kind {kind!r}: choose one of {', '.join(KINDS)}")
    if not NAME_RE.match(name):
        raise ScaffoldError(
            f"invalid plugin name {name!r}: use lowercase letters, digits and single hyphens, "
            "starting with a letter (e.g. my-agent)"
        )
    if len(name) > 64:
        raise ScaffoldError(f"invalid plugin name {name!r}: at most 64 characters")
    package = package_name(name, kind)
    if not package.isidentifier() or keyword.iskeyword(package) or package in RESERVED:
        raise ScaffoldError(f"invalid plugin name {name!r}: package name {package!r} is not usable")


def check_free(name: str, kind: str) -> None:
    """Raise :class:`ScaffoldError` when the plugin's distribution is already installed here
    (``--name echo`` would make ``harnessplane-echo``, the bundled echo plugin)."""
    from importlib.metadata import PackageNotFoundError, distribution

    dist = distribution_name(name, kind)
    try:
        distribution(dist)
    except PackageNotFoundError:
        return
    raise ScaffoldError(
        f"invalid plugin name {name!r}: {dist} is an installed distribution; choose another name"
    )


KIND_CHOICES = {
    "harness": "a one-function harness (an async function)",
    "harness-cli": "a full adapter that spawns a command and parses its JSONL",
    "sandbox": "a sandbox provider",
    "credentials": "a credential resolver",
}


def _read(question: str) -> str:
    """One answer from stdin (the question on stderr: stdout carries only the project path)."""
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if not line:
        raise ScaffoldError("cancelled (no answer on stdin)")
    return line.strip()


def ask(
    kind: str | None, name: str | None, description: str | None, author: str | None
) -> dict[str, str]:
    """The questions ``--kind/--name/--description/--author`` left open, in the template's
    order, each answer checked as it is given (a bad one is said at once and asked again)."""
    while name is None:
        answer = _read("Plugin name (lowercase letters, digits, hyphens) [my-plugin]: ")
        name = _checked(answer or "my-plugin", kind)
    if kind is None:
        _show_kinds()
    while kind is None:
        kind = _kind(_read(f"Kind of plugin [1-{len(KIND_CHOICES)}, default 1]: ") or "1")
        if kind is not None and _checked(name, kind) is None:  # e.g. its distribution exists
            name = None
            while name is None:
                name = _checked(_read("Plugin name: ") or "my-plugin", kind)
    if description is None:
        description = _read("One-line description [from the kind]: ") or None
    if author is None:
        author = _read("Author [Your Name]: ") or None
    answers = {"kind": kind, "name": name}
    answers.update({k: v for k, v in (("description", description), ("author", author)) if v})
    return answers


def _checked(name: str, kind: str | None) -> str | None:
    """``name`` if it is usable for ``kind`` (any kind while it is not known yet), else say
    why on stderr and return None."""
    try:
        for each in [kind] if kind is not None else list(KIND_CHOICES):
            check_name(name, each)
        if kind is not None:
            check_free(name, kind)
    except ScaffoldError as error:
        sys.stderr.write(f"  {error}\n")
        return None
    return name


def _kind(answer: str) -> str | None:
    choices = list(KIND_CHOICES)
    if answer.isdigit() and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1]
    if answer in choices:
        return answer
    sys.stderr.write(f"  choose 1-{len(choices)} or one of {', '.join(choices)}\n")
    return None


def _show_kinds() -> None:
    for number, (choice, what) in enumerate(KIND_CHOICES.items(), 1):
        sys.stderr.write(f"  {number} - {choice}: {what}\n")


def generate(
    *,
    kind: str | None = None,
    name: str | None = None,
    description: str | None = None,
    author: str | None = None,
    output_dir: str | Path = ".",
    no_input: bool = False,
) -> Path:
    """Render the template; returns the generated project directory."""
    try:
        from cookiecutter.exceptions import (  # type: ignore[import-untyped]
            CookiecutterException,
            FailedHookException,
            OutputDirExistsException,
        )
        from cookiecutter.main import cookiecutter  # type: ignore[import-untyped]
    except ImportError:
        raise ScaffoldError(
            "cookiecutter is not installed (pip install 'harnessplane[scaffold]')"
        ) from None
    output = Path(output_dir)
    if output.exists() and not output.is_dir():
        raise ScaffoldError(f"output directory {str(output)!r} is not a directory")
    if kind is not None and kind not in KINDS:
        raise ScaffoldError(f"invalid kind {kind!r}: choose one of {', '.join(KINDS)}")
    if name is not None:
        check_name(name, kind or KINDS[0])
        check_free(name, kind or KINDS[0])
        if kind is not None or no_input:
            target = output / distribution_name(name, kind or KINDS[0])
            if target.exists():
                raise ScaffoldError(
                    f"{str(target)!r} already exists; choose another name or --output-dir"
                )
    extra: dict[str, Any] = {}
    for key, value in (
        ("plugin_name", name),
        ("kind", kind),
        ("description", description),
        ("author", author),
    ):
        if value is not None:
            extra[key] = value
    # Cookiecutter logs a traceback for a failed hook; the hook already said why, in one line.
    quiet = logging.NullHandler()
    logging.getLogger("cookiecutter").addHandler(quiet)
    try:
        created = cookiecutter(
            str(template_dir()),
            no_input=no_input,
            extra_context=extra,
            output_dir=str(output),
            overwrite_if_exists=False,
            accept_hooks=True,
        )
    except OutputDirExistsException:
        raise ScaffoldError(
            "the project directory already exists; choose another name or --output-dir"
        ) from None
    except FailedHookException:
        raise ScaffoldError("the template rejected the input (see the line above)") from None
    except CookiecutterException as error:
        raise ScaffoldError(f"the template failed: {str(error).splitlines()[0][:200]}") from None
    except (KeyboardInterrupt, EOFError):
        raise ScaffoldError("cancelled") from None
    finally:
        logging.getLogger("cookiecutter").removeHandler(quiet)
    return Path(created)


def cli_main(args: argparse.Namespace) -> int:
    """``harness new [--kind K] [--name N] [--description D] [--author A] [--output-dir D] [--no-input]``."""
    answers: dict[str, Any] = {
        "kind": getattr(args, "kind", None),
        "name": getattr(args, "name", None),
        "description": getattr(args, "description", None),
        "author": getattr(args, "author", None),
    }
    no_input = bool(getattr(args, "no_input", False))
    try:
        if not no_input:
            if answers["name"] is not None:  # given: checked before any question
                check_name(answers["name"], answers["kind"] or KINDS[0])
                check_free(answers["name"], answers["kind"] or KINDS[0])
            answers = dict(ask(**answers))
        path = generate(
            **answers,
            output_dir=getattr(args, "output_dir", None) or ".",
            no_input=True,  # every answer is known (and checked) by now
        )
    except ScaffoldError as error:
        sys.stderr.write(f"harness: error: {error}\n")
        return EXIT_USAGE
    sys.stdout.write(f"{path}\n")
    sys.stderr.write(
        f"harness: created {path.name}; next: cd {path} && pip install -e '.[test]' && python -m pytest\n"
    )
    return 0
