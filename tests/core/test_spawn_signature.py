"""``spawn`` is written three times on purpose - the contract's ``SessionContext.spawn`` (what an
adapter may call), the runtime's context that implements it, and the one-function harness's
``session.spawn`` that hands over to it - so each can carry its own docstring for its reader.
This test keeps the three the same call."""

from __future__ import annotations

import inspect

from harness_hookspecs.protocols import SessionContext

from harness_core.context import RuntimeSessionContext
from harness_core.function_harness import FunctionSession


def _parameters(function):
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def test_the_three_spawns_take_the_same_arguments():
    contract = _parameters(SessionContext.spawn)
    assert _parameters(RuntimeSessionContext.spawn) == contract
    assert _parameters(FunctionSession.spawn) == contract
    assert [name for name, *_ in contract] == ["self", "argv", "env", "cwd", "stdin", "lifetime"]
