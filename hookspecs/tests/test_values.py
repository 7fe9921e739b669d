"""The contract's classes answer ``repr``, ``==`` and ``hash`` as attrs-generated methods would,
from the shared :class:`harness_hookspecs.values.Value` (nothing generated per class at import)."""

from __future__ import annotations

import threading

import attrs
import harness_hookspecs
import pytest
from harness_hookspecs import (
    Credential,
    MessageDelta,
    SandboxHandle,
    SessionClosed,
    SessionOpened,
    ThinkingDelta,
)
from harness_hookspecs.values import Value

CONTRACT = sorted(
    (
        cls
        for name in harness_hookspecs.__all__
        if attrs.has(cls := getattr(harness_hookspecs, name))
    ),
    key=lambda cls: cls.__name__,
)


def _twin(cls: type) -> type:
    """The same fields in a class whose repr/eq/hash attrs generates, as the contract's were."""
    fields = {
        a.name: attrs.field(default=None, repr=a.repr, eq=a.eq, hash=a.hash)
        for a in attrs.fields(cls)
    }
    return attrs.make_class(cls.__name__, fields, frozen=True)


def _unchecked(cls: type, values: dict[str, object]) -> object:
    """An instance with ``values`` set as they are (no validators: any sample value will do)."""
    instance = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(instance, name, value)
    return instance


def test_every_contract_class_uses_the_shared_methods_not_generated_ones():
    assert len(CONTRACT) >= 50
    for cls in CONTRACT:
        assert issubclass(cls, Value), cls
        for method in ("__repr__", "__eq__", "__ne__", "__hash__"):
            assert getattr(cls, method) is getattr(Value, method), (cls, method)


@pytest.mark.parametrize("cls", CONTRACT, ids=lambda cls: cls.__name__)
def test_repr_eq_and_hash_answer_as_attrs_generated_ones(cls):
    twin = _twin(cls)
    names = [a.name for a in attrs.fields(cls)]
    values = {name: (i, f"v{i}") for i, name in enumerate(names)}
    ours, theirs = _unchecked(cls, values), _unchecked(twin, values)
    assert repr(ours) == repr(theirs)
    assert ours == _unchecked(cls, values)
    assert (ours != _unchecked(cls, values)) is False
    assert hash(ours) == hash(_unchecked(cls, values))
    for name in names:  # a field that counts makes a difference, one that doesn't makes none
        changed = {**values, name: "other"}
        assert (ours == _unchecked(cls, changed)) == (theirs == _unchecked(twin, changed))
    assert ours != theirs and ours != object() and (ours == 1) is False


def test_a_field_kept_out_of_repr_or_eq_stays_out():
    credential = Credential(env_var="API_KEY", value="sk-secret")
    assert "sk-secret" not in repr(credential) and "env_var='API_KEY'" in repr(credential)
    first = SandboxHandle(provider="local", workspace=None, state=object())
    second = SandboxHandle(provider="local", workspace=None, state=object())
    assert first == second  # (its env mapping makes it unhashable, as before)
    assert first != SandboxHandle(provider="other", workspace=None)


def test_same_fields_in_another_class_are_not_equal():
    assert MessageDelta(text="a") != ThinkingDelta(text="a")
    assert MessageDelta.__eq__(MessageDelta(text="a"), ThinkingDelta(text="a")) is NotImplemented
    assert {MessageDelta(text="a"), MessageDelta(text="a"), SessionClosed()} == {
        MessageDelta(text="a"),
        SessionClosed(),
    }


def test_repr_reads_as_the_constructor_call_and_survives_a_cycle():
    opened = SessionOpened(provider="echo", target="local")
    assert repr(opened).startswith("SessionOpened(provider='echo', target='local', model=None,")
    looped = _unchecked(SandboxHandle, {"provider": "x", "workspace": None, "env": {}})
    object.__setattr__(looped, "command_prefix", (looped,))
    object.__setattr__(looped, "state", None)
    assert repr(looped) == (
        "SandboxHandle(provider='x', workspace=None, command_prefix=(...,), env={})"
    )


def test_repr_in_threads_does_not_mistake_another_threads_value_for_a_cycle():
    message = MessageDelta(text="same")
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(repr(message))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == ["MessageDelta(text='same')"] * 8
