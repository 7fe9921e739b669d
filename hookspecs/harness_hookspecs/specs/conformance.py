"""Conformance hooks: what the conformance kit needs to drive a harness offline.

:class:`ConformanceProfile` lives with the other models (:mod:`harness_hookspecs.models`, and
``from harness_hookspecs import ConformanceProfile``); it stays importable from here.

A plugin for a real CLI answers :func:`conformance_profile` for its harness so that
``harness conformance NAME`` (and the pytest plugin) can run it deterministically and offline:
configuration pointing the CLI at a fake model server, a prompt whose turn completes, and a
"slow" prompt whose turn keeps running long enough to be cancelled.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AbstractContextManager

from ..markers import hookspec
from ..models import ConformanceProfile

__all__ = ["ConformanceProfile", "conformance_profile"]


@hookspec(firstresult=True)
def conformance_profile(
    harness: str,
) -> (
    ConformanceProfile
    | AbstractContextManager[ConformanceProfile]
    | AbstractAsyncContextManager[ConformanceProfile]
    | None
):
    """Say how the conformance kit drives the harness registered as ``harness``.

    Called by the conformance kit (``harness_core.conformance``) once per run, before anything
    else. Return ``None`` for a harness that is not yours. Return a :class:`ConformanceProfile`,
    or a (sync or async) context manager yielding one: the kit enters it before the run (start a
    fake model server there) and exits it afterwards, whatever happened. ``firstresult``: the
    first non-``None`` answer wins.
    """
