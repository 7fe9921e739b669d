"""The conformance kit: drive one harness through the whole contract and judge every event.

``run_conformance("echo")`` (or an adapter object, or an ``@harness`` function) opens sessions in
a temporary workspace on a real SQLite ledger, runs two turns in one session, cancels a running
turn, resumes the session from its :class:`SessionRef` in a *new* controller, closes it (twice),
exports it, and then judges what it saw. Each check passes or fails; nothing is skipped - a check
the kit could not exercise fails with ``not exercised: <why>`` (no false PASS).

How it sees the adapter: the kit registers a probe plugin for the run. Its ``wrapper=True``
lifecycle hooks wrap the adapter's turn stream and session calls, an ``on_event`` observer records
every event the controller emits, and a credential resolver injects a secret canary. The probe
*quarantines* contract violations in the adapter's own stream - a non-canonical item is recorded
and withheld, an item of a payload subclass is projected to its canonical class, an out-of-bounds
payload is withheld - so one defect fails the one check that names it (and the report) instead of
cascading into every check downstream. Violations the probe withholds are never hidden: the
report fails.

The package: :mod:`.report` (the result model), :mod:`.probe` (the plugin that watches the
adapter), :mod:`.processes` (what the run's processes left behind), :mod:`.run` (the phases),
:mod:`.check` and :mod:`.checks` (one registered unit per check), :mod:`.kit` (entry points).

Use ``harness conformance NAME [--json]`` on the command line, or the pytest plugin
(``pytest --harness-conformance NAME``, the ``harness_conformance`` fixture, or
``harness_core.pytest_plugin.conformance_tests``) in a plugin's own test suite.
"""

from __future__ import annotations

from harness_hookspecs import ConformanceProfile

from .checks import ALL as _ALL
from .kit import CANARY_ENV_VAR, arun_conformance, cli_main, run_conformance
from .probe import CANARY_CREDENTIAL_VAR
from .report import CheckResult, ConformanceReport

#: Every check, in report order, with what it establishes.
CHECKS: tuple[tuple[str, str], ...] = tuple((c.name, c.description) for c in _ALL)
CHECK_NAMES: tuple[str, ...] = tuple(name for name, _ in CHECKS)

__all__ = [
    "CANARY_CREDENTIAL_VAR",
    "CANARY_ENV_VAR",
    "CHECKS",
    "CHECK_NAMES",
    "CheckResult",
    "ConformanceProfile",
    "ConformanceReport",
    "arun_conformance",
    "cli_main",
    "run_conformance",
]
