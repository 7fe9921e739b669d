"""The deploy files (issue 33) others copy: the Kubernetes manifests validate against the
Kubernetes schemas (``kubernetes-validate``, strict: no unknown field), the compose file holds
together, and the worker arguments both carry are ones the real ``harness worker`` accepts.
No cluster or Docker runs here; this is what can be checked without one."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
#: The Kubernetes version the manifests are written for (its schemas ship in the package).
KUBERNETES = "1.30.0"


def manifests() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def worker_arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` (``worker ...``) parsed by the real ``harness worker`` arguments."""
    from executor_temporal.cli import add_arguments

    assert argv[0] == "worker"
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser)
    return parser.parse_args(argv[1:])


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    found = manifests()
    assert {doc["kind"] for _, doc in found} >= {"Deployment", "Service", "PodDisruptionBudget"}
    for _name, doc in found:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)  # raises on a bad field
    listed = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in (DEPLOY / "k8s").glob("*.yaml")
                                    if p.name != "kustomization.yaml")  # fmt: skip


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["spec"].__setitem__("replicas", "three"),
        lambda d: d["spec"]["template"]["spec"]["containers"][0].__setitem__("commnd", ["x"]),
    ],
    ids=["wrong-type", "unknown-field"],
)
def test_the_validator_refuses_a_broken_manifest(break_it: Any) -> None:
    worker = next(doc for name, doc in manifests() if doc["kind"] == "Deployment")
    broken = copy.deepcopy(worker)
    break_it(broken)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_the_worker_drains_within_the_pods_termination_grace() -> None:
    worker = next(doc for name, doc in manifests() if doc["metadata"]["name"] == "harness-worker"
                  and doc["kind"] == "Deployment")  # fmt: skip
    pod = worker["spec"]["template"]["spec"]
    args = worker_arguments(pod["containers"][0]["args"])
    assert pod["terminationGracePeriodSeconds"] >= args.grace + 15
    probes = pod["containers"][0]
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert args.http[1] == pod["containers"][0]["ports"][0]["containerPort"]
    env = {e["name"]: e.get("value", "") for e in pod["containers"][0]["env"]}
    assert ":" not in env["HARNESS_LEDGER"].split("@")[0].removeprefix("postgresql://")


def test_the_compose_file_holds_together() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "temporal", "worker", "serve"}
    for name, service in services.items():
        assert "image" in service or "build" in service, name
        for needed in service.get("depends_on", {}):
            assert needed in services, (name, needed)
        for secret in service.get("secrets", []):
            source = secret if isinstance(secret, str) else secret["source"]
            assert source in compose["secrets"], (name, source)
        for volume in service.get("volumes", []):
            assert volume.split(":")[0] in compose.get("volumes", {}), (name, volume)
        for config in service.get("configs", []):
            assert (DEPLOY / compose["configs"][config["source"]]["file"]).is_file(), name
    # a session's turns stay on one worker only where the service starts activities eagerly
    dynamic = services["temporal"]["configs"][0]["target"]
    assert dynamic.endswith(services["temporal"]["environment"]["DYNAMIC_CONFIG_FILE_PATH"])
    eager = yaml.safe_load((DEPLOY / "temporal-dynamicconfig.yaml").read_text())
    assert eager["system.enableActivityEagerExecution"] == [{"value": True}]
    worker = services["worker"]
    args = worker_arguments(worker["command"])
    grace = float(worker["stop_grace_period"].rstrip("s"))
    assert grace >= args.grace + 15
    assert ":" not in worker["environment"]["HARNESS_LEDGER"].split("@")[0][len("postgresql://") :]
    build = worker["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
