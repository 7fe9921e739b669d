"""Redaction of secrets from events before observers, the ledger, the CLI or an export see them
(and, in the same pass, lone surrogates replaced by U+FFFD: text no reader could encode)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

import attrs
from harness_hookspecs import MessageDelta, Payload

REDACTED = "[REDACTED]"

#: Common key shapes, redacted even when nobody registered them.
KEY_SHAPES = re.compile(
    r"(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*)"
)


#: The shortest text the pattern can match: registered secrets are at least this long (see
#: :meth:`Redactor.add`) and every key shape is longer.
MIN_MATCH = 6

#: A UTF-16 surrogate alone: no encoding can write it, so it never reaches the ledger.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

#: Payload class -> its field names (``attrs.fields`` per event was a measurable cost).
_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def encodings(value: str) -> set[str]:
    """The forms a secret commonly takes when a program re-encodes it."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = {
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        binascii.hexlify(raw).decode(),
        binascii.hexlify(raw).decode().upper(),
        # the bytes, not the str: a secret read from the environment may hold lone surrogates
        # (bytes that were not UTF-8), which quote() would refuse to encode
        quote(raw, safe=""),
        quote_plus(raw, safe=""),
        value.upper(),
        value.lower(),
    }
    forms |= {form.rstrip("=") for form in forms}  # unpadded base64
    forms.discard(value)
    return forms


class Redactor:
    """Replaces registered secret values and common key shapes in every string field."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] = KEY_SHAPES

    def add(self, value: str) -> None:
        """Register a secret and its common encodings (base64, hex, URL-encoding)."""
        # Very short values would redact ordinary words; they are not useful secrets anyway.
        if not isinstance(value, str) or len(value) < MIN_MATCH or value in self._secrets:
            return
        self._secrets.add(value)
        self._secrets.update(v for v in encodings(value) if len(v) >= MIN_MATCH)
        literal = "|".join(re.escape(s) for s in sorted(self._secrets, key=len, reverse=True))
        self._pattern = re.compile(f"{literal}|{KEY_SHAPES.pattern}")

    @property
    def has_secrets(self) -> bool:
        return bool(self._secrets)

    def partial_suffix(self, value: str) -> int:
        """Length of the longest suffix of ``value`` that is a proper prefix of a secret.

        The controller holds that much streamed text back until the next piece arrives, so a
        secret split across two deltas is redacted as a whole.
        """
        longest = 0
        for secret in self._secrets:
            for k in range(min(len(secret) - 1, len(value)), longest, -1):
                if value.endswith(secret[:k]):
                    longest = k
                    break
        return longest

    def hold_back(self, value: str) -> int:
        """How much of streamed ``value`` to hold back until the next piece arrives: the
        longest suffix that could start a secret, but never part of a secret already whole in
        ``value`` (one secret's form may end with the first characters of another's - the
        hex form of a secret starts with digits its own tail may end with - and cutting there
        would leave the whole secret, less its last characters, unredacted)."""
        cut = len(value) - self.partial_suffix(value)
        for match in self._pattern.finditer(value):
            if match.start() < cut < match.end():
                cut = match.end()
        return len(value) - cut

    def text(self, value: str) -> str:
        return self._pattern.sub(REDACTED, value)

    def payload(self, payload: Payload) -> Payload:
        if type(payload) is MessageDelta:  # most events of a stream: often a short token
            text = payload.text
            if len(text) < MIN_MATCH and text.isascii():
                return payload  # too short to match, and no surrogate in ASCII
        names = _FIELD_NAMES.get(type(payload))
        if names is None:
            names = _FIELD_NAMES[type(payload)] = tuple(a.name for a in attrs.fields(type(payload)))
        changes: dict[str, Any] | None = None  # made only when a field changes (rare)
        search = self._pattern.search
        for name in names:
            value = getattr(payload, name)
            if not isinstance(value, str):
                continue
            if not value.isascii() and _SURROGATE.search(value):
                # Replaced at the boundary: every reader (a strict UTF-8 stdout, an export)
                # must be able to write back what the ledger holds.
                value = _SURROGATE.sub(REPLACEMENT, value)
                changes = changes or {}
                changes[name] = value
            # Nothing shorter than MIN_MATCH can match (secrets and key shapes are longer).
            if len(value) >= MIN_MATCH and search(value):
                redacted = self._pattern.sub(REDACTED, value)
                if name in ("summary", "message", "hint"):
                    redacted = redacted[:240]
                changes = changes or {}
                changes[name] = redacted
        if changes is None:
            return payload
        try:
            result: Payload = attrs.evolve(payload, **changes)
        except (TypeError, ValueError):
            # "[REDACTED]" can be longer than a short secret and break a field's bound (a
            # 128-character tool name); the original satisfied the bound, so the redacted text
            # cut to the original's length does too - and the secret is already gone from it.
            clipped = {k: v[: len(getattr(payload, k))] for k, v in changes.items()}
            result = attrs.evolve(payload, **clipped)
        return result


def add_known_secrets(redactor: Redactor, resolvers: Iterable[Any]) -> None:
    """Register every value a credential resolver knows (``known_values()``, optional), granted
    to this session or not: a harness may come by a secret it was never given."""
    for resolver in resolvers:
        known = getattr(resolver, "known_values", None)
        if known is None:
            continue
        try:
            values = known()
        except Exception:  # a resolver that cannot list its values still resolves normally
            continue
        for value in values:
            redactor.add(value)
