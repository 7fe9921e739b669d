"""The `{{ cookiecutter.plugin_name }}` credential resolver.

The runtime asks every registered resolver once per session open or resume, injects the chosen
values into that session's process environment only, and redacts every injected value from
events, the ledger and exports.

This skeleton reads namespaced host variables: `{{ cookiecutter.__env_prefix }}_<VAR>=value` on the host
becomes `<VAR>=value` in the session (e.g. `{{ cookiecutter.__env_prefix }}_ANTHROPIC_API_KEY`). Replace `resolve`
with your secret store (a vault, a keychain, a token exchange).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from harness_hookspecs import Credential, CredentialRequest

NAME = {{ cookiecutter.plugin_name | tojson }}
PREFIX = "{{ cookiecutter.__env_prefix }}_"
_VAR = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")


class {{ cookiecutter.__class_prefix }}CredentialResolver:
    """A credential resolver (see `harness_hookspecs.CredentialResolver`)."""

    name = NAME

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ

    async def resolve(self, request: CredentialRequest) -> Sequence[Credential]:
        environ = os.environ if self._environ is None else self._environ
        found = []
        for key, value in sorted(environ.items()):
            var = key[len(PREFIX) :]
            if not key.startswith(PREFIX) or not _VAR.match(var) or not value:
                continue
            found.append(
                Credential(
                    env_var=var,
                    value=value,
                    purpose="harness-llm",
                    vendor=request.vendor,  # a vendor-scoped fallback, not an agent-level grant
                    priority=10,
                    source=NAME,
                )
            )
        return found
