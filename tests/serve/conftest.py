from __future__ import annotations

import anyio
import pytest
from harness_hookspecs import (
    ModelCompleted,
    ModelRequested,
    PermissionRequest,
    ThinkingCompleted,
    ThinkingDelta,
    ToolCompleted,
    ToolStarted,
    Usage,
    UsageReported,
)

from harness_core import HarnessError, harness

from .browser import browser  # noqa: F401 (the viewer's browser tests' fixture)

pytest.importorskip("starlette", reason="harness serve needs the serve extra (starlette)")
pytest.importorskip("uvicorn", reason="harness serve needs the serve extra (uvicorn)")

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@harness("scripted", features=("resume", "cancel", "permissions"))
async def scripted(message, session):
    """Streams what the prompt asks for: `slow N` chunks 0.2 s apart, a tool call with usage,
    a permission request, or markup that must be shown as text."""
    prompt = message.content
    if prompt.startswith("slow"):
        count = int(prompt.split()[1].rstrip(":")) if len(prompt.split()) > 1 else 50
        for index in range(count):
            yield f"chunk{index} "
            await anyio.sleep(0.2)
        return
    if prompt.startswith("tool"):
        yield "Looking at the repo. "
        yield ToolStarted(call_id="call_1", name="read_file", summary="read README.md")
        yield ToolCompleted(call_id="call_1", name="read_file", ok=True, summary="42 lines")
        yield "The README is fine."
        yield UsageReported(usage=Usage(input_tokens=120, output_tokens=30, cost_usd=0.0021))
        return
    if prompt.startswith("think"):
        yield ModelRequested(model="m-1")
        yield ThinkingDelta(text="weigh the ")
        yield ThinkingDelta(text="options first")
        yield ThinkingCompleted(text="weigh the options first")
        yield "Option B."
        yield ModelCompleted(
            model="m-1", usage=Usage(input_tokens=50, output_tokens=7), duration_ms=420
        )
        return
    if prompt.startswith("permission"):
        decision = await session.request_permission(
            PermissionRequest.for_tool("edit", kind="write", path="README.md", request_id="perm_1")
        )
        yield "allowed" if decision.allowed else f"denied: {decision.reason}"
        return
    if prompt.startswith("fail"):
        yield "Trying. "
        raise HarnessError("provider-unavailable", "the model server did not answer")
    if prompt.startswith("xss"):
        yield XSS
        yield ToolStarted(call_id="x", name="<b>tool</b>", summary='"><script>alert(1)</script>')
        yield ToolCompleted(call_id="x", name="<b>tool</b>", ok=False)
        return
    yield f"echo: {prompt}"


@pytest.fixture
def serve(tmp_path):
    from harness_core.testing.serve import ServeThread

    def start(**kwargs):
        return ServeThread(
            scripted,
            ledger=f"sqlite:///{tmp_path}/serve.sqlite",
            state_dir=tmp_path / "state",
            **kwargs,
        )

    return start


@pytest.fixture
def workspace_dir(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return str(path)
