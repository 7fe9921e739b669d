"""`harness serve` as a user starts it: what it binds, what it prints, how it stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.error
import urllib.request

import pytest

from ..conftest import harness_cmd


def listening_addresses(port: int) -> set[str]:
    """Local addresses in LISTEN state on ``port``, from /proc/net/tcp (IPv4) and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if int(port_hex, 16) == port and fields[3] == "0A":
                if len(address) == 8:
                    found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
                else:
                    found.add(address)
    return found


def start(cli_env, tmp_path, *extra, env_extra=None):
    env = dict(cli_env, **(env_extra or {}))
    process = subprocess.Popen(
        [*harness_cmd(), "serve", "--port", "0", *extra],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = [process.stdout.readline() for _ in range(3)]
    return process, lines


def stop(process):
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(15)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_busy_port_is_one_line_naming_the_address_and_the_os_reason(cli_env, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [*harness_cmd(), "serve", "--port", str(port)],
            cwd=tmp_path,
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 2
    assert run.stderr == (
        f"harness: error: invalid-request: cannot listen on 127.0.0.1:{port} "
        "(Address already in use)\n"
    )


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_serve_binds_loopback_by_default_and_prints_the_token(cli_env, tmp_path):
    process, lines = start(cli_env, tmp_path)
    try:
        assert lines[0].startswith("harness serve: listening on http://127.0.0.1:"), lines
        url = lines[0].split()[-1]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert listening_addresses(port) == {"127.0.0.1"}
        token = lines[1].split()[-1]
        assert len(token) >= 32 and lines[2].strip().endswith(f"#token={token}")
        request = urllib.request.Request(
            url + "api/sessions",
            data=json.dumps({"harness": "echo"}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
    finally:
        assert stop(process) == 0
    assert "Traceback" not in process.stderr.read()


def test_ctrl_c_with_open_event_streams_ends_them_and_prints_no_traceback(cli_env, tmp_path):
    # A viewer following a session and a client streaming a running turn when the server stops.
    process, lines = start(cli_env, tmp_path)
    streams = []
    try:
        url, token = lines[0].split()[-1], lines[1].split()[-1]

        def post(path, body):
            request = urllib.request.Request(
                url + path,
                data=json.dumps(body).encode(),
                method="POST",
                headers={"Authorization": f"Bearer {token}"},
            )
            return urllib.request.urlopen(request, timeout=30)

        with post("api/sessions", {"harness": "echo"}) as response:
            session_id = json.load(response)["ref"]["session_id"]
        follower = urllib.request.urlopen(
            f"{url}api/sessions/{session_id}/events?follow=1", timeout=30
        )
        streams.append(follower)
        assert follower.readline().startswith(b"id: 1")  # following: session.opened came
        turn = post(f"api/sessions/{session_id}/turns", {"prompt": "sleep 30"})
        streams.append(turn)
        assert turn.readline().startswith(b"id: 2")  # the turn is running
        assert stop(process) == 0
        for stream in streams:
            rest = stream.read().decode()
            assert 'event: end\ndata: {"reason": "server-closing"' in rest, rest
    finally:
        for stream in streams:
            stream.close()
        if process.poll() is None:
            process.kill()
    err = process.stderr.read()
    assert "Traceback" not in err and "ERROR" not in err, err


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_serve_binds_where_told_and_reads_the_token_from_the_environment(cli_env, tmp_path):
    secret = "from-the-environment-0123456789"
    process, lines = start(
        cli_env,
        tmp_path,
        "--host",
        "127.0.0.2",
        "--token-env",
        "SERVE_TOKEN",
        env_extra={"SERVE_TOKEN": secret},
    )
    try:
        url = lines[0].split()[-1]
        assert url.startswith("http://127.0.0.2:")
        assert listening_addresses(int(url.rstrip("/").rsplit(":", 1)[1])) == {"127.0.0.2"}
        assert secret not in "".join(lines)  # a token from the environment is not echoed
        request = urllib.request.Request(
            url + "api/sessions",
            data=b'{"harness": "echo"}',
            method="POST",
            headers={"Authorization": f"Bearer {secret}", "Host": "127.0.0.2"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
    finally:
        assert stop(process) == 0


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--token-env", "NOPE_UNSET"], {}, "--token-env: $NOPE_UNSET is not set"),
        (["--token-env", "EMPTY"], {"EMPTY": ""}, "--token-env: $EMPTY is empty"),
        (["--token-env", "SHORT"], {"SHORT": "abc"}, "needs 16+ characters"),
        (["--port", "70000"], {}, "a port is an integer"),
        (["--port", "-1"], {}, "a port is an integer"),
        (["--timeout", "-1"], {}, "a positive number"),
        (["--read-timeout", "0"], {}, "--read-timeout: must be a positive number"),
        (["--max-connections", "0"], {}, "--max-connections: must be at least 1"),
        (["--max-backlog", "0"], {}, "--max-backlog: must be at least 1"),
        (["--max-backlog", "2.5"], {}, "--max-backlog: must be"),
    ],
)
def test_serve_bad_input_is_one_line(cli_env, tmp_path, args, env, message):
    result = subprocess.run(
        [*harness_cmd(), "serve", *args],
        cwd=tmp_path,
        env=dict(cli_env, **env),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3  # argparse: usage + the one error line
    assert not (tmp_path / ".harness").exists()


def test_serve_runs_turns_on_a_controller_with_the_backlog_bound_it_was_given(tmp_path):
    """--max-backlog reaches the Controller serve runs turns on; without it, no bound."""
    import argparse

    import anyio

    from harness_core.serve.command import add_arguments, controller_from

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ledger = ["--ledger", f"sqlite://{tmp_path / 'ledger.sqlite'}"]

    async def bounds() -> list[int | None]:
        found = []
        for extra in (["--max-backlog", "64"], []):
            async with controller_from(parser.parse_args([*ledger, *extra])) as controller:
                found.append(controller.delivery.max_backlog)
        return found

    assert anyio.run(bounds) == [64, None]
