"""The two hooks of a CLI adapter's entry point: register the harness, give its offline
conformance profile. ``register_harnesses, conformance_profile = cli_hooks(...)`` in the plugin
module is all an adapter's ``plugin.py`` needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .conformance import OfflineProfile, offline_profile


def cli_hooks(
    name: str, adapter: Callable[[], Any], offline: OfflineProfile
) -> tuple[Callable[..., None], Callable[..., Any]]:
    @hookimpl
    def register_harnesses(register: Callable[[Any], None]) -> None:
        register(adapter())

    @hookimpl
    def conformance_profile(harness: str) -> Any:
        return offline_profile(offline) if harness == name else None

    return register_harnesses, conformance_profile
