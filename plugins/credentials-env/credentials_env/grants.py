"""Credential grants: which secret an agent (or, as a fallback, a vendor) may carry.

A grant mirrors a row of seed 004's ``MJ: AI Agent Credentials`` junction: ``purpose``
(``harness-llm`` or ``integration``), the environment variable it is injected as, a ``priority``
and a ``status`` (``active`` or ``revoked``). It is either agent-level (``agent`` set) or a
vendor-scoped fallback (``vendor`` set, no ``agent``) - the zero-config LLM key for a harness of
that vendor. The value comes from the host environment (``from_env``, the ``env`` resolver) or
inline from a permission-checked secrets file (``value``, the ``file`` resolver).

Errors never echo a value: a bad grant is reported by its index and the rule it broke.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen
from harness_hookspecs import Credential, CredentialRequest, HarnessError
from harness_hookspecs.values import Value

PURPOSES = ("harness-llm", "integration")
STATUSES = ("active", "revoked")
MIN_SECRET_LENGTH = 8

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$")
#: Variables a credential may never replace: they steer how the harness process itself runs.
RESERVED_ENV = frozenset({"PATH", "HOME", "USER", "SHELL", "TMPDIR", "PWD", "PYTHONPATH"})
_RESERVED_PREFIXES = ("LD_", "DYLD_")

#: Built-in vendor fallbacks (``vendor_defaults``): the conventional LLM key variable per vendor.
VENDOR_ENV: Mapping[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
}
VENDOR_DEFAULT_PRIORITY = -1000

_FIELDS = {"agent", "vendor", "purpose", "env", "from_env", "value", "priority", "status"}


def _env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError("env must be a variable name (letters, digits, _)")
    if value in RESERVED_ENV or value.startswith(_RESERVED_PREFIXES):
        raise ValueError("env must not be a reserved variable (PATH, HOME, LD_*...)")
    return value


def _check_env(instance: Any, attribute: Any, value: str) -> None:
    _env_name(value)


def _check_optional_env(instance: Any, attribute: Any, value: str | None) -> None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError("from_env must be a variable name (letters, digits, _)")


def _check_name(instance: Any, attribute: Any, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not _NAME.match(value)):
        raise ValueError(f"{attribute.name} must be 1-128 letters, digits or . _ @ : + -")


def _check_in(choices: tuple[str, ...]) -> Any:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")

    return check


def _check_priority(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("priority must be an integer")


@frozen(repr=False, eq=False)
class Grant(Value):
    """One grant. Exactly one value source: ``from_env`` (env resolver) or ``value`` (file)."""

    env: str = field(validator=_check_env)
    purpose: str = field(default="harness-llm", validator=_check_in(PURPOSES))
    agent: str | None = field(default=None, validator=_check_name)
    vendor: str | None = field(default=None, validator=_check_name)
    priority: int = field(default=0, validator=_check_priority)
    status: str = field(default="active", validator=_check_in(STATUSES))
    from_env: str | None = field(default=None, validator=_check_optional_env)
    value: str | None = field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.agent is None and self.vendor is None:
            raise ValueError("a grant needs an agent (grant) or a vendor (fallback)")
        if self.value is not None and not isinstance(self.value, str):
            raise ValueError("value must be a string")

    @property
    def active(self) -> bool:
        return self.status == "active"

    def matches(self, request: CredentialRequest) -> bool:
        """Active, for a requested purpose, and for this agent (or, as fallback, this vendor)."""
        if not self.active or self.purpose not in request.purposes:
            return False
        if self.agent is not None:
            return self.agent == request.agent and self.vendor in (None, request.vendor)
        return request.vendor is not None and self.vendor == request.vendor

    def credential(self, value: str, source: str) -> Credential:
        if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
            raise HarnessError(
                "policy-refused",
                f"a credential value is shorter than {MIN_SECRET_LENGTH} characters "
                "and cannot be redacted safely",
            )
        if "\x00" in value or "\n" in value or "\r" in value:
            raise HarnessError("policy-refused", "a credential value contains a line break")
        return Credential(
            env_var=self.env,
            value=value,
            purpose=self.purpose,
            agent=self.agent,
            vendor=self.vendor,
            priority=self.priority,
            source=source,
        )


def parse_grants(data: Any, *, where: str, inline_values: bool) -> list[Grant]:
    """Grants from decoded TOML/JSON: ``{"grants": [{...}, ...]}`` (or a bare list).

    ``inline_values`` says whether grants carry ``value`` (secrets file) or ``from_env``. Raises
    ``HarnessError("invalid-request")`` naming the grant's index and the rule, never a value.
    """
    if isinstance(data, Mapping):
        unknown = set(data) - {"grants", "vendor_defaults"}
        if unknown:
            raise HarnessError("invalid-request", f"{where}: unknown top-level key")
        items = data.get("grants", [])
    else:
        items = data
    if not isinstance(items, list):
        raise HarnessError("invalid-request", f"{where}: grants must be a list of tables")
    grants: list[Grant] = []
    for index, item in enumerate(items):
        if isinstance(item, Grant):
            grants.append(item)
            continue
        grants.append(
            grant_from_mapping(item, where=f"{where}: grant {index}", inline=inline_values)
        )
    return grants


def grant_from_mapping(item: Any, *, where: str, inline: bool) -> Grant:
    if not isinstance(item, Mapping):
        raise HarnessError("invalid-request", f"{where} must be a table")
    unknown = set(item) - _FIELDS
    if unknown:
        raise HarnessError("invalid-request", f"{where} has an unknown field")
    if "env" not in item:
        raise HarnessError("invalid-request", f"{where} needs env (the variable to inject)")
    if inline and "value" not in item:
        raise HarnessError("invalid-request", f"{where} needs a value in a secrets file")
    if not inline and "value" in item:
        raise HarnessError(
            "invalid-request", f"{where}: inline values belong in a 0600 secrets file"
        )
    if inline and "from_env" in item:
        raise HarnessError("invalid-request", f"{where}: a secrets file grant takes no from_env")
    try:
        return Grant(**dict(item))
    except (TypeError, ValueError) as error:
        rule = str(error).splitlines()[0] if str(error) else "invalid field"
        # The rule texts are our own validators' fixed strings; refuse anything longer.
        if len(rule) > 120 or not rule.isprintable():
            rule = "invalid field"
        raise HarnessError("invalid-request", f"{where}: {rule}") from None


def vendor_default_grants() -> list[Grant]:
    return [
        Grant(env=name, vendor=vendor, purpose="harness-llm", priority=VENDOR_DEFAULT_PRIORITY)
        for vendor, names in VENDOR_ENV.items()
        for name in names
    ]


def as_grants(grants: Iterable[Grant | Mapping[str, Any]], *, inline: bool) -> list[Grant]:
    return parse_grants(list(grants), where="grants", inline_values=inline)
