"""Where the contract's names live, and the old import paths that must keep working."""

from __future__ import annotations

import attrs
import harness_hookspecs
import pluggy
import pytest
from harness_hookspecs import PROJECT_NAME, ConformanceProfile, bounds, specs


def test_conformance_profile_lives_with_the_models_and_stays_importable_where_it_was():
    from harness_hookspecs.models import ConformanceProfile as from_models
    from harness_hookspecs.specs.conformance import ConformanceProfile as from_spec_module

    assert ConformanceProfile is from_models is from_spec_module
    assert "ConformanceProfile" in harness_hookspecs.__all__


def test_conformance_profile_is_frozen_and_checks_its_fields():
    profile = ConformanceProfile(prompt="say ok", env={"A": "1"}, config={"k": 2})
    assert (profile.prompt, profile.slow_prompt, profile.target) == ("say ok", None, "local")
    assert dict(profile.env) == {"A": "1"} and dict(profile.config) == {"k": 2}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        profile.prompt = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        ConformanceProfile(prompt="")
    with pytest.raises(ValueError):
        ConformanceProfile(prompt="ok\x00")
    with pytest.raises(ValueError):
        ConformanceProfile(target="mars")


def test_bounds_are_public_and_the_private_module_still_answers():
    from harness_hookspecs import _bounds

    for name in _bounds.__all__:
        assert getattr(_bounds, name) is getattr(bounds, name)
    assert bounds.is_name("claude-code") and not bounds.is_name("Claude Code")
    assert bounds.has_control("a\x1bb") and not bounds.has_control("a\tb", allow_whitespace=True)
    assert bounds.MAX_SAFE_INTEGER == 2**53 - 1


def test_every_hookspec_module_loads_into_a_plugin_manager():
    pm = pluggy.PluginManager(PROJECT_NAME)
    for module in specs.ALL:
        pm.add_hookspecs(module)
    names = {name for name in dir(pm.hook) if not name.startswith("_")}
    assert {"register_harnesses", "harness_run_turn", "conformance_profile", "on_event"} <= names


def test_session_ref_says_harness_and_still_accepts_provider():
    from harness_hookspecs import HarnessDescriptor, SessionRef

    new = SessionRef(harness="echo", target="local", session_id="s-1")
    old = SessionRef(provider="echo", target="local", session_id="s-1")
    assert new == old == SessionRef("echo", "local", "s-1")
    assert new.harness == new.provider == "echo"
    # The serialised form is unchanged in protocol version 1.
    assert attrs.asdict(new) == {"provider": "echo", "target": "local", "session_id": "s-1"}
    assert attrs.evolve(new, session_id="s-2").harness == "echo"
    with pytest.raises(TypeError):
        SessionRef(harness="echo", provider="echo", target="local", session_id="s-1")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        SessionRef(target="local", session_id="s-1")  # type: ignore[call-overload]
    with pytest.raises(ValueError):
        SessionRef(harness="Not A Name", target="local", session_id="s-1")
    descriptor = HarnessDescriptor(provider="echo", targets=["local"])
    assert descriptor.harness == "echo"
