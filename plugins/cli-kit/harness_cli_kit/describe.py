"""The descriptor every bundled CLI adapter gives: local target, version 0.1.0."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness_hookspecs import HarnessDescriptor

from .locate import cli_details


def local_descriptor(
    name: str,
    display_name: str,
    features: Iterable[str],
    details: Mapping[str, str],
    vendor: str | None = None,
) -> HarnessDescriptor:
    return HarnessDescriptor(
        provider=name,
        targets=["local"],
        features=list(features),
        version="0.1.0",
        vendor=vendor,
        display_name=display_name,
        details=details,
    )


def cli_descriptor(
    name: str,
    display_name: str,
    *,
    tested_cli: str,
    features: Iterable[str],
    details: Mapping[str, str],
    binary: str | None = None,
    vendor: str | None = None,
) -> HarnessDescriptor:
    """:func:`local_descriptor` with the tested release and, given ``binary``, the installed
    version and path (``describe()`` has no session: config ``cli_path`` is not known here)."""
    info = cli_details(binary, tested_cli) if binary else {"tested_cli": tested_cli}
    return local_descriptor(name, display_name, features, {**info, **details}, vendor)
