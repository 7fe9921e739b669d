"""The Temporal connection options (:mod:`.connection` checks them), apart: ``harness run``
builds its parser with them on every run, which must not import the connection's checks (nor
the workflow shapes) for a turn that does not use Temporal."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["ENV_API_KEY", "add_arguments"]

#: Where an API key may come from besides ``--api-key-file`` (Temporal's own CLI reads it too).
ENV_API_KEY = "TEMPORAL_API_KEY"


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
