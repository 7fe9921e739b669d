"""Entry point module: registers the ``env`` and ``file`` resolvers with host-level config.

- ``env``: grants from ``$HARNESS_CREDENTIAL_GRANTS`` (default
  ``$XDG_CONFIG_HOME/harness-core/grants.toml``, optional), plus the conventional vendor key
  variables as lowest-priority vendor fallbacks unless the file sets ``vendor_defaults = false``.
- ``file``: inline-value grants from ``$HARNESS_SECRETS_FILE`` (default
  ``$XDG_CONFIG_HOME/harness-core/secrets.toml``; required only when the variable is set), which
  must be mode 0600 and owned by the user.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .resolvers import (
    ENV_GRANTS_FILE,
    ENV_SECRETS_FILE,
    EnvCredentialResolver,
    FileCredentialResolver,
    config_dir,
)


@hookimpl
def register_credential_resolvers(register: Callable[[Any], None]) -> None:
    grants = os.environ.get(ENV_GRANTS_FILE) or config_dir() / "grants.toml"
    register(EnvCredentialResolver(grants_file=grants, vendor_defaults=True))
    secrets = os.environ.get(ENV_SECRETS_FILE)
    register(
        FileCredentialResolver(secrets or config_dir() / "secrets.toml", required=bool(secrets))
    )
