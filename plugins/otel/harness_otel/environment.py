"""An OpenTelemetry SDK ``TracerProvider`` made from the standard ``OTEL_*`` environment, for
the ``harness`` command line (a host application configures its own SDK instead).

- ``OTEL_TRACES_EXPORTER``: comma-separated exporter names, each looked up where the SDK's own
  auto-configuration looks (the ``opentelemetry_traces_exporter`` entry points: ``console``
  comes with ``opentelemetry-sdk``, ``otlp`` with ``opentelemetry-exporter-otlp``); ``none``
  exports nothing. Unset, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``)
  set: ``otlp``, the specification's default;
- ``OTEL_SDK_DISABLED=true``: nothing;
- the service name, resource attributes and batching (``OTEL_SERVICE_NAME``,
  ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``) are read by the SDK itself.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any

from harness_hookspecs import HarnessError

EXPORTERS_GROUP = "opentelemetry_traces_exporter"
SDK_HINT = "pip install 'harnessplane-otel[sdk]' (opentelemetry-sdk)"


def wanted(explicit: bool = False) -> list[str]:
    """The exporter names the environment asks for (``explicit``: ``--otel`` was given, so the
    specification's default ``otlp`` applies even without an endpoint)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "").strip()
    if not raw:
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        )
        return ["otlp"] if explicit or endpoint else []
    return [name.strip() for name in raw.split(",") if name.strip() and name.strip() != "none"]


def exporter(name: str) -> Any:
    """A new span exporter registered under ``name`` (``invalid-request`` naming it if none)."""
    found = [ep for ep in entry_points(group=EXPORTERS_GROUP) if ep.name == name]
    if not found:
        install = "opentelemetry-exporter-otlp" if name == "otlp" else f"an exporter named {name}"
        raise HarnessError(
            "invalid-request",
            f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed (pip install "
            f"{install}; or OTEL_TRACES_EXPORTER=console)"[:240],
        )
    return found[0].load()()


def tracer_provider(names: list[str]) -> Any:
    """A ``TracerProvider`` exporting to ``names`` through batch processors."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise HarnessError(
            "invalid-request", f"OpenTelemetry export needs the SDK: {SDK_HINT}"
        ) from None
    from opentelemetry.sdk.resources import Resource

    named = "OTEL_SERVICE_NAME" in os.environ or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    # The SDK reads OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES; without them: "harness".
    provider = TracerProvider(
        resource=Resource.create({} if named else {"service.name": "harness"})
    )
    for name in names:
        provider.add_span_processor(BatchSpanProcessor(exporter(name)))
    return provider
