{%- if cookiecutter.kind == "harness-cli" -%}
"""Entry point: registers the `{{ cookiecutter.plugin_name }}` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl
from harness_hookspecs.specs.conformance import ConformanceProfile

from .adapter import NAME, {{ cookiecutter.__class_prefix }}Adapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register({{ cookiecutter.__class_prefix }}Adapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    """How `harness conformance {{ cookiecutter.plugin_name }}` drives this harness offline."""
    if harness != NAME:
        return None
    # `sleep 30` keeps the bundled agent busy so the kit can cancel a running turn. For a real
    # CLI that talks to a model, declare `harness_cli_kit.conformance.OfflineProfile(binary,
    # model)` and return `offline_profile(...)`: the real CLI against harness_core's fake model
    # server (`harness_cli_kit.plugin.cli_hooks` writes both hooks for you).
    return ConformanceProfile(prompt="reply ok", slow_prompt="sleep 30")
{%- elif cookiecutter.kind == "sandbox" -%}
"""Entry point: registers the `{{ cookiecutter.plugin_name }}` sandbox provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .provider import {{ cookiecutter.__class_prefix }}SandboxProvider


@hookimpl
def register_sandbox_providers(register: Callable[[Any], None]) -> None:
    register({{ cookiecutter.__class_prefix }}SandboxProvider())
{%- elif cookiecutter.kind == "credentials" -%}
"""Entry point: registers the `{{ cookiecutter.plugin_name }}` credential resolver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .resolver import {{ cookiecutter.__class_prefix }}CredentialResolver


@hookimpl
def register_credential_resolvers(register: Callable[[Any], None]) -> None:
    register({{ cookiecutter.__class_prefix }}CredentialResolver())
{%- endif %}
