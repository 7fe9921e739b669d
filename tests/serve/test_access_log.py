"""`harness serve`'s request log: a line per request on stderr (never the token), none with
--quiet."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from .test_command import start, stop

LINE = re.compile(
    r'^127\.0\.0\.1:\d+ - \[\d\d/\w{3}/\d{4} \d\d:\d\d:\d\d\] "(?P<request>[^"]+)" '
    r"(?P<status>\d{3}) \d+\.\d ms$"
)


def traffic(url: str, token: str) -> None:
    with urllib.request.urlopen(url + "?q=hello&state=idle", timeout=10) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(url + "sessions/no-such-session", timeout=10)
    request = urllib.request.Request(
        url + "api/sessions",
        data=json.dumps({"harness": "echo"}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201


def test_each_request_is_one_line_without_the_token(cli_env, tmp_path):
    process, lines = start(cli_env, tmp_path)
    url, token = lines[0].split()[-1], lines[1].split()[-1]
    try:
        traffic(url, token)
    finally:
        assert stop(process) == 0
    logged = [line for line in process.stderr.read().splitlines() if line.strip()]
    parsed = [LINE.match(line) for line in logged]
    assert all(parsed), logged
    assert [(m["request"], m["status"]) for m in parsed if m] == [
        ("GET /?q=hello&state=idle HTTP/1.1", "200"),
        ("GET /sessions/no-such-session HTTP/1.1", "404"),
        ("POST /api/sessions HTTP/1.1", "201"),
    ]
    assert token not in "\n".join(logged)


def test_quiet_logs_nothing(cli_env, tmp_path):
    process, lines = start(cli_env, tmp_path, "--quiet")
    url, token = lines[0].split()[-1], lines[1].split()[-1]
    try:
        traffic(url, token)
    finally:
        assert stop(process) == 0
    assert process.stderr.read().strip() == ""
