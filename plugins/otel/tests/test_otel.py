"""The observer's spans and metrics for real sessions run by the controller, read back from
the OpenTelemetry SDK's in-memory exporter and metric reader."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from harness_hookspecs import (
    PermissionRequested,
    PermissionResolved,
    ToolCompleted,
    ToolStarted,
    Usage,
    UsageReported,
)

from harness_core import Controller, HarnessError, harness, plugins_from

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk")
from harness_otel import OtelObserver  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode  # noqa: E402


@harness("coder")
async def coder(message, session):
    if message.content == "fix":
        yield "Reading the file. "
        yield ToolStarted(call_id="call_1", name="read_file", summary="read app.py")
        yield ToolCompleted(call_id="call_1", name="read_file", ok=True, summary="120 lines")
        yield "Fixed."
        yield UsageReported(usage=Usage(input_tokens=100, output_tokens=20, cost_usd=0.01))
    elif message.content == "ask":
        yield PermissionRequested(request_id="perm_1", summary="write app.py", tool="edit")
        yield PermissionResolved(request_id="perm_1", decision="deny", source="policy")
        yield "Not allowed."
    elif message.content == "fail":
        raise HarnessError("provider-unavailable")
    else:
        yield "Done."
        yield UsageReported(usage=Usage(input_tokens=50, output_tokens=5, cost_usd=0.002))


@pytest.fixture
def telemetry():
    exporter = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    observer = OtelObserver(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return observer, exporter, reader


def run_session(tmp_path, observer, prompts):
    async def main():
        async with Controller(
            plugins=plugins_from([coder, observer]),
            ledger=f"sqlite:///{tmp_path}/ledger.sqlite",
            state_dir=tmp_path / "state",
        ) as controller:
            ref = await controller.open_session(harness="coder", workspace=str(tmp_path))
            for prompt in prompts:
                await controller.run_turn(ref, prompt)
            await controller.close_session(ref)
            return ref.session_id

    return anyio.run(main)


def metric_points(reader):
    points = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    return points


def test_two_turn_session_with_a_tool_call(tmp_path, telemetry):
    observer, exporter, reader = telemetry
    session_id = run_session(tmp_path, observer, ["fix", "again"])
    spans = exporter.get_finished_spans()
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert sorted(by_name) == [
        "execute_tool read_file",
        "harness.session coder",
        "invoke_agent coder",
    ]
    (session,) = by_name["harness.session coder"]
    turn1, turn2 = sorted(by_name["invoke_agent coder"], key=lambda s: s.start_time)
    (tool,) = by_name["execute_tool read_file"]

    # one trace; session is the root, turns its children, the tool a child of turn 1
    assert {span.context.trace_id for span in spans} == {session.context.trace_id}
    assert session.parent is None
    assert turn1.parent.span_id == session.context.span_id
    assert turn2.parent.span_id == session.context.span_id
    assert tool.parent.span_id == turn1.context.span_id
    # nested in time
    assert session.start_time <= turn1.start_time <= tool.start_time <= tool.end_time
    assert tool.end_time <= turn1.end_time <= turn2.start_time <= turn2.end_time <= session.end_time

    assert session.attributes["gen_ai.conversation.id"] == session_id
    assert session.attributes["gen_ai.system"] == "coder"
    assert turn1.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn1.attributes["gen_ai.usage.input_tokens"] == 100
    assert turn1.attributes["gen_ai.usage.output_tokens"] == 20
    assert turn1.attributes["harness.cost_usd"] == pytest.approx(0.01)
    assert turn1.attributes["harness.turn.status"] == "completed"
    assert turn2.attributes["gen_ai.usage.input_tokens"] == 50
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "read_file"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["harness.tool.summary"] == "120 lines"
    assert all(span.status.status_code != StatusCode.ERROR for span in spans)
    # prompts and answers are not exported
    assert not any("Fixed." in str(v) or v == "fix" for s in spans for v in s.attributes.values())

    points = metric_points(reader)
    usage = {p.attributes["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]}
    assert usage == {"input": 150, "output": 25}
    assert sum(p.value for p in points["harness.cost"]) == pytest.approx(0.012)
    assert sum(p.value for p in points["harness.turns"]) == 2
    assert sum(p.count for p in points["gen_ai.client.operation.duration"]) == 2


def test_failed_turn_and_permission_spans(tmp_path, telemetry):
    observer, exporter, reader = telemetry
    run_session(tmp_path, observer, ["ask", "fail"])
    spans = exporter.get_finished_spans()
    (permission,) = [s for s in spans if s.name == "harness.permission edit"]
    turns = sorted([s for s in spans if s.name == "invoke_agent coder"], key=lambda s: s.start_time)
    assert permission.parent.span_id == turns[0].context.span_id
    assert permission.attributes["harness.permission.decision"] == "deny"
    assert permission.attributes["harness.permission.source"] == "policy"
    failed = turns[1]
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "provider-unavailable"
    assert failed.attributes["harness.turn.status"] == "failed"
    statuses = {
        p.attributes["harness.turn.status"]: p.value for p in metric_points(reader)["harness.turns"]
    }
    assert statuses == {"completed": 1, "failed": 1}


def test_idle_without_an_sdk_and_registered_by_entry_point(tmp_path):
    from harness_core.plugins import Plugins

    plugins = Plugins()
    assert "otel" in plugins.info, plugins.broken
    assert "on_event" in plugins.info["otel"].hooks
    from harness_otel import observer

    # no global SDK provider installed: the observer keeps no state
    run_session(tmp_path, observer, ["fix"])
    assert observer.idle


_GLOBAL_PROVIDER_SCRIPT = """
import sys
from harness_otel import observer
active_before = observer._active()
loaded_before = "opentelemetry.trace" in sys.modules
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
print(active_before, loaded_before, observer._active())
"""


def test_the_default_observer_imports_opentelemetry_only_when_a_global_provider_can_exist():
    """Loaded by every run, the observer does not import opentelemetry (~10 ms) until
    something could have installed a global SDK provider - and then follows it as before."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", _GLOBAL_PROVIDER_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert done.stdout.split() == ["False", "False", "True"]
