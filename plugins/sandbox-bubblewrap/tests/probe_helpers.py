"""Probes run inside a sandbox (stdlib only): each returns a string or value and never raises.

Shared by ``conftest.py`` (whose snippets run after this file's text, with ``python -I -c``) and
``probe_agent.py`` (which imports it), so both sides probe the same way.
"""

from __future__ import annotations

import errno
import os
import socket
import urllib.request


def err(e: BaseException) -> str:
    if isinstance(e, urllib.request.HTTPError):
        return f"http-{e.code}"
    e = getattr(e, "reason", e)
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


def tcp(host: str, port: int) -> str:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as e:
        return err(e)


def get(url: str, proxy: bool = True) -> str:
    handlers = [] if proxy else [urllib.request.ProxyHandler({})]
    try:
        return urllib.request.build_opener(*handlers).open(url, timeout=5).read().decode()
    except Exception as e:
        return err(e)


def connect(target: str, proxy: tuple[str, int] = ("127.0.0.1", 3128)) -> str:
    """An HTTP CONNECT through ``proxy`` to ``target``, then a GET over the tunnel."""
    try:
        s = socket.create_connection(proxy, timeout=5)
    except OSError as e:
        return err(e)
    with s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = s.recv(4096).decode(errors="replace")
        status = head.split(" ")[1] if " " in head else head
        if status != "200":
            return f"status-{status}"
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        return data.decode(errors="replace").rsplit("\r\n\r\n", 1)[-1]


def unix(path: str, abstract: bool = False) -> str:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(("\0" + path) if abstract else path)
        return "connected"
    except OSError as e:
        return err(e)
    finally:
        s.close()


def write(path: str, text: str = "x") -> str:
    try:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return err(e)


def listdir(path: str) -> list[str] | str:
    try:
        return sorted(os.listdir(path))
    except OSError as e:
        return err(e)
