"""The CLI's exit codes (documented in :mod:`harness_core.cli.errors`); a module of its own so
the fast commands (``list``, ``plugins``, ``--help``) need not import the error types."""

from __future__ import annotations

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 69
EXIT_INTERNAL = 70
EXIT_LEDGER = 74
EXIT_CANCELLED = 130
