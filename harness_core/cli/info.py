"""What is installed: ``plugins``, ``list``, ``describe``, ``--version``; and ``new``, whose
scaffolding lives in its own module."""

from __future__ import annotations

import argparse

from .exits import EXIT_OK
from .output import Out, print_json, print_json_lines

#: The core's distribution name, newest first (it was renamed ``harnessplane``).
_DISTRIBUTIONS = ("harnessplane", "harness-core")


def version_text() -> str:
    from importlib import metadata

    for name in _DISTRIBUTIONS:
        try:
            return f"harness {metadata.version(name)} ({name})"
        except metadata.PackageNotFoundError:
            continue
    return "harness (version unknown: not installed as a distribution)"


def cmd_plugins(args: argparse.Namespace) -> int:
    from ..plugin_cache import listing

    rows = listing()["plugins"]
    if args.json:
        print_json_lines(rows)
        return EXIT_OK
    if not rows:
        print("no plugins installed")
        return EXIT_OK
    table = []
    for row in rows:
        if row["broken"]:
            table.append([row["name"], "-", "BROKEN: " + row["error"]])
            continue
        provides = []
        for key, label in (
            ("harnesses", "harness"),
            ("sandbox_providers", "sandbox"),
            ("credential_resolvers", "credentials"),
            ("ledger_schemes", "ledger"),
        ):
            provides += [f"{label}:{name}" for name in row[key]]
        provides += [f"command:{command[0]}" for command in row["commands"]]
        provides += ["run options"] if row["run_options"] else []
        provides += [f"hook:{h}" for h in row["hooks"] if not h.startswith("register_")]
        version = f" {row['version']}" if row["version"] else ""
        dist = f"{row['distribution']}{version}" if row["distribution"] else "-"
        table.append([row["name"], dist, ", ".join(provides) or "-"])
    Out().table(["PLUGIN", "DISTRIBUTION", "PROVIDES"], table)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from ..plugin_cache import listing

    names = listing()["harnesses"]
    if args.json:
        print_json_lines({"name": name} for name in names)
    else:
        for name in names:
            print(name)
    return EXIT_OK


def cmd_describe(args: argparse.Namespace) -> int:
    from ..config_check import config_rows
    from ..plugins import get_plugins
    from ..serialize import descriptor_to_dict
    from .prompt import check_harness

    plugins = get_plugins()
    check_harness(plugins, args.name)
    descriptor = plugins.describe(args.name)
    if args.json:
        print_json(descriptor_to_dict(descriptor))
        return EXIT_OK
    rows = [
        ["provider", descriptor.harness],
        ["name", descriptor.display_name or "-"],
        ["version", descriptor.version or "-"],
        ["vendor", descriptor.vendor or "-"],
        ["targets", ", ".join(sorted(descriptor.targets))],
        ["features", ", ".join(sorted(descriptor.features)) or "-"],
        ["protocol", str(descriptor.protocol_version)],
        *[[key, str(value)] for key, value in sorted(descriptor.details.items())],
        *config_rows(descriptor),
    ]
    Out().table(["FIELD", "VALUE"], rows)
    return EXIT_OK


def cmd_new(args: argparse.Namespace) -> int:
    from ..scaffold import cli_main

    return int(cli_main(args))
