"""Validate the names before anything is written (cookiecutter aborts on a non-zero exit)."""

import keyword
import re
import sys

NAME = {{ cookiecutter.plugin_name | tojson }}
KIND = {{ cookiecutter.kind | tojson }}
DIST = {{ cookiecutter.__dist_name | tojson }}
PACKAGE = {{ cookiecutter.__package_name | tojson }}

KINDS = ("harness", "harness-cli", "sandbox", "credentials")
# A plugin name: what hosts type (`harness run NAME`), also the base of the distribution and
# package names, so it must map to a valid Python identifier.
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
# Names whose package would shadow the framework or the standard library's test helpers.
RESERVED = {"harness_core", "harness_hookspecs", "test", "tests", "pytest"}


def problem() -> str | None:
    if KIND not in KINDS:
        return f"invalid kind {KIND!r}: choose one of {', '.join(KINDS)}"
    if not NAME_RE.match(NAME):
        return (
            f"invalid plugin name {NAME!r}: use lowercase letters, digits and single hyphens, "
            "starting with a letter (e.g. my-agent)"
        )
    if len(NAME) > 64:
        return f"invalid plugin name {NAME!r}: at most 64 characters"
    if not PACKAGE.isidentifier() or keyword.iskeyword(PACKAGE) or PACKAGE in RESERVED:
        return f"invalid plugin name {NAME!r}: package name {PACKAGE!r} is not usable"
    return None


message = problem()
if message:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(1)
