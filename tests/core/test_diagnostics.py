"""The runtime's diagnostic log as a library host sees it: stdlib logging, a file per session
beside the ledger, nothing on stderr unless the host asks."""

from __future__ import annotations

import logging

import anyio

from harness_core import harness
from harness_core.diagnostics import LOGGER_NAME, session_log


@harness("raises-on-turn")
async def raises_on_turn(message, session):
    raise LookupError(f"no widget called {message.content}")


def test_a_raised_exception_reaches_the_session_file_and_the_hosts_handlers(
    make_controller, tmp_path, capfd
):
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep()
    logging.getLogger(LOGGER_NAME).addHandler(keep)

    async def main():
        async with make_controller(raises_on_turn) as controller:
            ref = await controller.open_session(harness="raises-on-turn", workspace=str(tmp_path))
            result = await controller.run_turn(ref, "sprocket")
            return controller.log_directory, ref.session_id, result

    try:
        directory, session_id, result = anyio.run(main)
    finally:
        logging.getLogger(LOGGER_NAME).removeHandler(keep)
    assert result.status == "failed" and result.reason == "provider-failed"
    assert all("widget" not in repr(event.payload) for event in result.events)
    assert directory == tmp_path / "logs"  # beside ledger.sqlite
    text = session_log(directory, session_id).read_text()
    assert "harness raises-on-turn raised LookupError in turn turn_" in text
    assert "LookupError: no widget called sprocket" in text
    assert [r.session_id for r in seen] == [session_id]  # type: ignore[attr-defined]
    out, err = capfd.readouterr()
    assert "widget" not in out + err


def test_an_id_that_is_no_file_name_is_hashed(tmp_path):
    assert session_log(tmp_path, "abc-123").name == "abc-123.log"
    odd = session_log(tmp_path, "../../etc/passwd")
    assert odd.parent == tmp_path and len(odd.stem) == 64
