"""``credentials-env``: credential resolvers for harness_core (environment and secrets file)."""

from __future__ import annotations

from .grants import MIN_SECRET_LENGTH, VENDOR_ENV, Grant, parse_grants
from .resolvers import (
    ENV_GRANTS_FILE,
    ENV_SECRETS_FILE,
    EnvCredentialResolver,
    FileCredentialResolver,
)

__all__ = [
    "ENV_GRANTS_FILE",
    "ENV_SECRETS_FILE",
    "MIN_SECRET_LENGTH",
    "VENDOR_ENV",
    "EnvCredentialResolver",
    "FileCredentialResolver",
    "Grant",
    "parse_grants",
]
