"""The descriptor every bundled CLI adapter gives: local target, version 0.1.0."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness_hookspecs import HarnessDescriptor


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
