"""How to reach a Temporal service: address, namespace, TLS and an API key, checked up front.

The same options on ``harness worker``, ``harness run --temporal`` and ``harness
reconcile-temporal``: ``--tls`` (the system's roots), ``--tls-ca FILE`` (a private CA),
``--tls-cert FILE`` + ``--tls-key FILE`` (mutual TLS, always together), ``--tls-server-name``
(the name the server's certificate carries when the address does not), and an API key (Temporal
Cloud) read from ``--api-key-file FILE`` or ``$TEMPORAL_API_KEY`` - never from argv, where
``ps`` would show it. An API key turns TLS on: a key never travels in clear text. Every problem
is one ``invalid-request`` line naming the option and the file (never the key); a service that
cannot be reached or refuses the handshake is one ``provider-unavailable`` line.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from attrs import field, frozen
from harness_hookspecs import HarnessError

from .shapes import NAMESPACE

if TYPE_CHECKING:
    from temporalio.client import Client

#: Where an API key may come from besides ``--api-key-file`` (Temporal's own CLI reads it too).
ENV_API_KEY = "TEMPORAL_API_KEY"
#: Largest certificate, key or API key file read (they are a few KB).
MAX_FILE = 1 << 20


def _address(_instance: Any, _attribute: Any, value: str) -> None:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise HarnessError(
            "invalid-request", f"the Temporal address {value[:80]!r} is not HOST:PORT"
        )


@frozen
class TemporalConnection:
    """A checked way to reach Temporal (see the module doc); :meth:`client` connects."""

    address: str = field(validator=_address)
    namespace: str = NAMESPACE
    tls: bool = False
    tls_ca: bytes | None = None
    tls_cert: bytes | None = None
    tls_key: bytes | None = None
    tls_server_name: str | None = None
    api_key: str | None = field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise HarnessError("invalid-request", "a TLS client certificate and key go together")

    @property
    def uses_tls(self) -> bool:
        return bool(
            self.tls or self.tls_ca or self.tls_cert or self.tls_server_name or self.api_key
        )

    def connect_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``temporalio.client.Client.connect`` besides the address."""
        from temporalio.service import TLSConfig

        arguments: dict[str, Any] = {"namespace": self.namespace}
        if self.uses_tls:
            arguments["tls"] = TLSConfig(
                server_root_ca_cert=self.tls_ca,
                client_cert=self.tls_cert,
                client_private_key=self.tls_key,
                domain=self.tls_server_name,
            )
        if self.api_key is not None:
            arguments["api_key"] = self.api_key
        return arguments

    async def client(self) -> Client:
        """A connected client; ``provider-unavailable`` (one line) when the service cannot be
        reached, refuses the TLS handshake or the key."""
        from temporalio.client import Client

        try:
            return await Client.connect(self.address, **self.connect_arguments())
        except RuntimeError:  # the SDK's connection failure (the reason may hold the address)
            how = " over TLS" if self.uses_tls else ""
            raise HarnessError(
                "provider-unavailable", f"cannot reach the Temporal service{how}"
            ) from None

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, address: str, prefix: str = "--"
    ) -> TemporalConnection:
        """From the options :func:`add_arguments` added with ``prefix`` (``address``: the
        address option's value); reads the files and ``$TEMPORAL_API_KEY``."""

        def pem(name: str) -> bytes | None:
            path = getattr(args, name.replace("-", "_"), None)
            return _pem(path, prefix + name) if path else None

        key_file = getattr(args, "api_key_file", None)
        if key_file:
            text = _read(key_file, prefix + "api-key-file").decode("utf-8", "replace").strip()
            if not text or any(c.isspace() for c in text):
                raise HarnessError(
                    "invalid-request", f"the API key file {key_file[-120:]} holds no key"
                )
            api_key: str | None = text
        else:
            api_key = os.environ.get(ENV_API_KEY, "").strip() or None
        return cls(
            address=address,
            namespace=getattr(args, "namespace", None) or NAMESPACE,
            tls=bool(getattr(args, "tls", False)),
            tls_ca=pem("tls-ca"),
            tls_cert=pem("tls-cert"),
            tls_key=pem("tls-key"),
            tls_server_name=getattr(args, "tls_server_name", None) or None,
            api_key=api_key,
        )


def add_arguments(p: argparse.ArgumentParser, prefix: str = "--") -> None:
    """The TLS and API key options (the address and namespace options are the command's);
    ``prefix``: ``--temporal-`` on ``harness run``, where a bare ``--tls`` would be unclear."""

    def option(name: str, **kw: Any) -> None:
        p.add_argument(prefix + name, dest=name.replace("-", "_"), **kw)

    option("tls", action="store_true", help="connect to Temporal over TLS")
    option("tls-ca", metavar="FILE", help="PEM CA certificate(s) the Temporal server's chains to")
    option("tls-cert", metavar="FILE", help="PEM client certificate (mutual TLS)")
    option("tls-key", metavar="FILE", help="PEM client private key (with the client certificate)")
    option("tls-server-name", metavar="NAME", help="the name on the server's certificate")
    option(
        "api-key-file",
        metavar="FILE",
        help=f"a file holding the Temporal API key (default: ${ENV_API_KEY}); turns TLS on",
    )


def _read(path: str, option: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE + 1)
    except OSError as error:
        raise HarnessError(
            "invalid-request", f"cannot read {option} {path[-120:]} ({error.strerror or error})"
        ) from None
    if len(data) > MAX_FILE:
        raise HarnessError("invalid-request", f"{option} {path[-120:]} is too large")
    return data


def _pem(path: str, option: str) -> bytes:
    data = _read(path, option)
    if b"-----BEGIN " not in data:
        raise HarnessError("invalid-request", f"{option} {path[-120:]} is not a PEM file")
    return data
