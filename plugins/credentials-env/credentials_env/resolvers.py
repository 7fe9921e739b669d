"""The ``env`` and ``file`` credential resolvers.

Both are asked once per session open or resume (``credentials_resolve``) and return the
credentials whose grants match the request: agent-level grants for ``request.agent`` and
vendor-scoped fallbacks for ``request.vendor``. The controller then keeps, per purpose, the
agent-level grants over the fallbacks, and per variable the highest priority; it injects the
values into that session's process environment only and registers them with its redactor.

Values are read at resolve time (not at plugin load), so a rotated key or a revoked grant takes
effect at the next session open without restarting the host.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from harness_hookspecs import Credential, CredentialRequest, HarnessError

from .grants import Grant, as_grants, parse_grants, vendor_default_grants

ENV_GRANTS_FILE = "HARNESS_CREDENTIAL_GRANTS"
ENV_SECRETS_FILE = "HARNESS_SECRETS_FILE"
MAX_FILE_BYTES = 1024 * 1024


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "harness-core"


def _decode(path: Path, raw: bytes, *, what: str) -> Any:
    # Parse errors are reported without the parser's message: it may quote the secret.
    try:
        text = raw.decode("utf-8")
        if path.suffix == ".json" or (path.suffix != ".toml" and text.lstrip().startswith("{")):
            return json.loads(text)
        import tomllib  # only for a TOML file (every run loads this plugin)

        return tomllib.loads(text)
    except (UnicodeDecodeError, ValueError):
        raise HarnessError("invalid-request", f"the {what} is not valid TOML or JSON") from None


class EnvCredentialResolver:
    """Grants whose values come from the host environment, read at session open.

    ``grants`` are :class:`Grant` objects or mappings (``env``, ``from_env`` defaulting to
    ``env``, ``purpose``, ``agent``/``vendor``, ``priority``, ``status``). ``grants_file`` is a
    TOML/JSON file of such grants (non-secret; re-read at every resolve). ``vendor_defaults``
    adds the conventional vendor key variables (``ANTHROPIC_API_KEY`` for ``anthropic``...) as
    lowest-priority vendor fallbacks. Only variables a matching grant names are ever read.
    """

    def __init__(
        self,
        grants: Iterable[Grant | Mapping[str, Any]] = (),
        *,
        grants_file: str | os.PathLike[str] | None = None,
        vendor_defaults: bool = False,
        environ: Mapping[str, str] | None = None,
        name: str = "env",
    ) -> None:
        self.name = name
        self.grants = as_grants(grants, inline=False)
        self.grants_file = Path(grants_file).expanduser() if grants_file is not None else None
        self.vendor_defaults = vendor_defaults
        self._environ = environ

    def _all_grants(self) -> list[Grant]:
        grants = list(self.grants)
        vendor_defaults = self.vendor_defaults
        if self.grants_file is not None:
            try:
                raw = self.grants_file.read_bytes()
            except FileNotFoundError:
                raw = None
            except OSError:
                raise HarnessError("invalid-request", "the grants file cannot be read") from None
            if raw is not None:
                data = _decode(self.grants_file, raw, what="grants file")
                grants.extend(parse_grants(data, where="grants file", inline_values=False))
                if isinstance(data, Mapping) and "vendor_defaults" in data:
                    vendor_defaults = data["vendor_defaults"] is True
        if vendor_defaults:
            grants.extend(vendor_default_grants())
        return grants

    def _resolve(self, request: CredentialRequest) -> list[Credential]:
        environ = os.environ if self._environ is None else self._environ
        found: list[Credential] = []
        for grant in self._all_grants():
            if not grant.matches(request):
                continue
            value = environ.get(grant.from_env or grant.env)
            if not value:
                continue  # the host does not have it: nothing to inject
            found.append(grant.credential(value, f"env:{self.name}"))
        return found

    async def resolve(self, request: CredentialRequest) -> Sequence[Credential]:
        return await anyio.to_thread.run_sync(self._resolve, request)

    def known_values(self) -> list[str]:
        """Every value any grant could resolve to, granted to this session or not: the runtime
        redacts them all (an in-process harness can read the host environment)."""
        environ = os.environ if self._environ is None else self._environ
        names = {grant.from_env or grant.env for grant in self._all_grants()}
        return [environ[name] for name in sorted(names) if environ.get(name)]


class FileCredentialResolver:
    """Grants with inline values from a secrets file (TOML or JSON).

    The file must be a regular file owned by the current user with no group or other
    permission bits (``chmod 600``); otherwise resolution is refused with ``policy-refused`` and a
    hint saying which rule failed. It is re-read at every resolve. A missing file is an
    ``invalid-request`` when ``required``, else yields nothing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        required: bool = True,
        name: str = "file",
    ) -> None:
        self.name = name
        self.path = Path(path).expanduser()
        self.required = required

    def load(self) -> list[Grant]:
        """Check the file's ownership and mode, then parse its grants."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
        except FileNotFoundError:
            if self.required:
                raise HarnessError("invalid-request", "the secrets file does not exist") from None
            return []
        except OSError:
            raise HarnessError("invalid-request", "the secrets file cannot be read") from None
        try:
            # fstat the opened file, so the checks apply to exactly what is read.
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise HarnessError("policy-refused", "the secrets file must be a regular file")
            if info.st_uid != os.geteuid():
                raise HarnessError(
                    "policy-refused", "the secrets file must be owned by the current user"
                )
            if info.st_mode & 0o077:
                raise HarnessError(
                    "policy-refused",
                    "the secrets file must be mode 0600 (no group or other access): chmod 600",
                )
            if info.st_size > MAX_FILE_BYTES:
                raise HarnessError("invalid-request", "the secrets file is larger than 1 MiB")
            with os.fdopen(os.dup(fd), "rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        data = _decode(self.path, raw, what="secrets file")
        return parse_grants(data, where="secrets file", inline_values=True)

    def known_values(self) -> list[str]:
        """Every inline value in the file, for redaction (see the env resolver)."""
        return [grant.value for grant in self.load() if grant.value]

    def _resolve(self, request: CredentialRequest) -> list[Credential]:
        return [
            grant.credential(grant.value or "", f"file:{self.name}")
            for grant in self.load()
            if grant.matches(request)
        ]

    async def resolve(self, request: CredentialRequest) -> Sequence[Credential]:
        return await anyio.to_thread.run_sync(self._resolve, request)
