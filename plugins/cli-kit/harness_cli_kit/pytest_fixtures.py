"""pytest plugin (entry point ``pytest11``) for CLI adapter test suites.

- ini option ``harness_cli_path``: directories (relative to the ini file) holding pinned CLIs;
  exported as ``HARNESS_CLI_PATH`` for the whole run (subprocesses too) unless already set, so the
  locator finds them after ``PATH``. The checkout layout lives in the project's config, not here.
- fixtures ``workspace`` (an empty directory) and ``make_controller`` (a Controller over exactly
  the given plugins, on a SQLite ledger under ``tmp_path``).

harness_core is imported only when a fixture runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .locate import CLI_PATH_ENV


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "harness_cli_path",
        type="paths",
        default=[],
        help="directories with the pinned harness CLIs (exported as HARNESS_CLI_PATH)",
    )


def pytest_configure(config: pytest.Config) -> None:
    paths = config.getini("harness_cli_path")
    if paths and not os.environ.get(CLI_PATH_ENV):
        os.environ[CLI_PATH_ENV] = os.pathsep.join(str(p) for p in paths)


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def make_controller(tmp_path: Path) -> Callable[..., Any]:
    """``make(*plugins, ledger=None, **kwargs)``: a Controller over exactly ``plugins``."""
    from harness_core import Controller, plugins_from

    def make(*plugins: object, ledger: str | None = None, **kwargs: Any) -> Any:
        return Controller(
            plugins=plugins_from(plugins),
            ledger=ledger or f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return make
