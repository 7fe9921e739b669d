"""In-sandbox relay: the sandbox's only way to the outside world under allowlist/mcp-only.

Runs *inside* bwrap as the command prefix (``python3 -I forwarder.py ... -- CMD...``), so it is
standard library only and never imports the rest of this package (the file is bind-mounted
read-only at a fixed path in the sandbox). It

* listens on ``127.0.0.1:PROXY_PORT`` of the sandbox's own loopback and relays each connection
  byte-for-byte to the host-side allowlist proxy's Unix socket (the client speaks HTTP proxy
  protocol: ``CONNECT host:port`` or absolute-URI requests; HTTP(S)_PROXY point here);
* for each ``--tunnel PORT:HOST:HPORT`` listens on ``127.0.0.1:PORT`` (and ``[::1]:PORT`` when
  possible) and, per connection, asks the proxy for ``CONNECT HOST:HPORT`` and then relays raw
  bytes, so loopback services of the host appear at the same address inside;
* binds every listener *before* starting the command (no start-up race), then runs the command
  as its child, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to it and exits with its
  exit status (128+N when it died of signal N).

The allowlist is enforced only on the host side; this process is untrusted plumbing.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import subprocess
import sys
import threading

_CHUNK = 65536
_HEAD_LIMIT = 16384


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _relay(a: socket.socket, b: socket.socket) -> None:
    t = threading.Thread(target=_pump, args=(b, a), daemon=True)
    t.start()
    _pump(a, b)
    t.join()
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.close()


def _unix(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def _serve_proxy(client: socket.socket, unix_path: str) -> None:
    try:
        upstream = _unix(unix_path)
    except OSError:
        client.close()
        return
    _relay(client, upstream)


def _serve_tunnel(client: socket.socket, unix_path: str, target: str) -> None:
    try:
        upstream = _unix(unix_path)
        upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode("ascii"))
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = upstream.recv(4096)
            if not data or len(buf) > _HEAD_LIMIT:
                raise OSError("proxy closed before answering CONNECT")
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) < 2 or status[1] != b"200":
            raise OSError("proxy refused CONNECT")
        if rest:
            client.sendall(rest)
    except OSError:
        with contextlib.suppress(OSError):
            client.close()
        with contextlib.suppress(OSError, UnboundLocalError):
            upstream.close()
        return
    _relay(client, upstream)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, port))
    s.listen(128)
    return s


def _accept_loop(listener: socket.socket, handler, *args) -> None:  # type: ignore[no-untyped-def]
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handler, args=(client, *args), daemon=True).start()


def _parse_tunnel(text: str) -> tuple[int, str]:
    port, sep, target = text.partition(":")
    if not sep or not port.isdigit() or not target:
        raise argparse.ArgumentTypeError(f"expected PORT:HOST:HPORT, got {text!r}")
    return int(port), target


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("forwarder: usage: forwarder.py [options] -- COMMAND...", file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(prog="forwarder")
    parser.add_argument("--unix", required=True, help="host proxy Unix socket (inside path)")
    parser.add_argument("--proxy-port", type=int, default=0, help="0 = no proxy listener")
    parser.add_argument("--tunnel", type=_parse_tunnel, action="append", default=[])
    ns = parser.parse_args(opts)
    if not command:
        print("forwarder: no command after --", file=sys.stderr)
        return 2

    listeners: list[tuple[socket.socket, object, tuple[str, ...]]] = []
    try:
        if ns.proxy_port:
            listeners.append((_listen("127.0.0.1", ns.proxy_port), _serve_proxy, (ns.unix,)))
        for port, target in ns.tunnel:
            listeners.append((_listen("127.0.0.1", port), _serve_tunnel, (ns.unix, target)))
            with contextlib.suppress(OSError):  # no IPv6 loopback: fine
                listeners.append((_listen("::1", port), _serve_tunnel, (ns.unix, target)))
    except OSError as exc:
        print(f"forwarder: cannot listen: {exc}", file=sys.stderr)
        return 125
    for listener, handler, args in listeners:
        threading.Thread(target=_accept_loop, args=(listener, handler, *args), daemon=True).start()

    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"forwarder: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return 127

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    for sig in (
        signal.SIGTERM,
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
    ):
        signal.signal(sig, forward)
    rc = child.wait()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
