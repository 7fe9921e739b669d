"""Conformance hooks: what the conformance kit needs to drive a harness offline.

A plugin for a real CLI answers :func:`conformance_profile` for its harness so that
``harness conformance NAME`` (and the pytest plugin) can run it deterministically and offline:
configuration pointing the CLI at a fake model server, a prompt whose turn completes, and a
"slow" prompt whose turn keeps running long enough to be cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import attrs
from attrs import field, frozen

from .. import _bounds
from ..markers import hookspec
from ..models import TARGETS


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@frozen
class ConformanceProfile:
    """How the conformance kit should drive one harness.

    - ``prompt``: an ordinary prompt whose turn ends ``turn.completed`` (used for every ordinary
      turn: two in one session, one more after resume);
    - ``slow_prompt``: a prompt whose turn keeps running (for seconds) so the kit can cancel it
      while the adapter is busy; ``None`` makes the kit hold an ordinary turn open itself after
      the adapter's first event and cancel it there;
    - ``model``, ``config``: passed in the open/resume request;
    - ``env``: set in the host environment for the duration of the run (a fake server's base
      URL, a CLI's config directory...) and restored afterwards;
    - ``target``: the target the kit opens sessions on;
    - ``turn_timeout``: the per-turn deadline (``None``: the kit's ``timeout`` argument);
    - ``cancel_after``: seconds the kit waits, once the adapter is running the slow turn,
      before it cancels.
    """

    prompt: str = field(
        default="Reply with the single word: ok",
        validator=_bounds.bounded(1, _bounds.TEXT_MAX, multiline=True),
    )
    slow_prompt: str | None = field(
        default=None,
        validator=_bounds.optional_bounded(1, _bounds.TEXT_MAX, multiline=True),
    )
    model: str | None = field(default=None, validator=_bounds.optional_bounded(1, 256))
    config: Mapping[str, Any] = field(converter=_frozen_mapping, factory=dict)
    env: Mapping[str, str] = field(converter=_frozen_mapping, factory=dict)
    target: str = field(default="local", validator=attrs.validators.in_(TARGETS))
    turn_timeout: float | None = None
    cancel_after: float = 0.2


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
