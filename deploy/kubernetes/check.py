#!/usr/bin/env python3
"""Checks the Kubernetes base offline, as CI runs it (no cluster needed; PyYAML needed):

  - the per-service manifests are what generate.py writes;
  - kustomization.yaml lists files that exist, and every manifest in the folder;
  - the base renders with `kubectl kustomize` (or `kustomize build`) when either is installed;
    without them the resource files are checked as they are, and the script says so;
  - every document has apiVersion, kind and metadata.name, and no two share kind and name;
  - every Deployment's selector matches its pod labels, and a headless Service (for the gateway, the
    public edge, a ClusterIP Service with a port named http), an autoscaling/v2
    HorizontalPodAutoscaler and a PodDisruptionBudget select or target it;
  - probes use the admin port (/readyz for readiness, /healthz for liveness), resources have
    requests and limits, referenced ConfigMaps, Secrets and claims exist, and the grace period
    covers the preStop sleep plus the runtime's drain.

    deploy/kubernetes/check.py
"""
import pathlib
import shutil
import subprocess
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
DRAIN_SECONDS = 10  # the runtime's bound on draining after SIGTERM
# The one Service meant for an Ingress or a load balancer: not headless, with a port named http.
PUBLIC_SERVICES = {"aviary-gateway"}

problems: list[str] = []


def problem(text: str) -> None:
    problems.append(text)


def render() -> tuple[list, str]:
    """The documents of the base, rendered by kustomize when possible."""
    for command in (["kubectl", "kustomize", str(HERE)], ["kustomize", "build", str(HERE)]):
        if shutil.which(command[0]):
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                problem(f"`{' '.join(command[:2])}` failed:\n{result.stderr.strip()}")
                return [], " ".join(command[:2])
            return [d for d in yaml.safe_load_all(result.stdout) if d is not None], " ".join(command[:2])
    documents = []
    kustomization = yaml.safe_load((HERE / "kustomization.yaml").read_text())
    for resource in kustomization.get("resources", []):
        path = HERE / resource
        if path.is_file():
            documents += [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return documents, "none (kubectl and kustomize are not installed: resource files checked unrendered)"


def check_kustomization() -> None:
    kustomization = yaml.safe_load((HERE / "kustomization.yaml").read_text())
    resources = kustomization.get("resources", [])
    for resource in resources:
        if not (HERE / resource).is_file():
            problem(f"kustomization.yaml lists {resource}, which does not exist")
    for path in sorted(HERE.glob("*.yaml")):
        if path.name != "kustomization.yaml" and path.name not in resources:
            problem(f"{path.name} is not listed in kustomization.yaml")


def matches(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def check_documents(documents: list) -> None:
    seen = set()
    by_kind: dict[str, dict[str, dict]] = {}
    for document in documents:
        if not isinstance(document, dict):
            problem(f"a document is not a mapping: {document!r:.60}")
            continue
        name = (document.get("metadata") or {}).get("name")
        if not document.get("apiVersion") or not document.get("kind") or not name:
            problem(f"a document lacks apiVersion, kind or metadata.name: {document!r:.80}")
            continue
        key = (document["kind"], name)
        if key in seen:
            problem(f"{document['kind']} {name} is defined twice")
        seen.add(key)
        by_kind.setdefault(document["kind"], {})[name] = document

    deployments = by_kind.get("Deployment", {})
    services = by_kind.get("Service", {})
    autoscalers = by_kind.get("HorizontalPodAutoscaler", {})
    budgets = by_kind.get("PodDisruptionBudget", {})
    config_maps = set(by_kind.get("ConfigMap", {}))
    secrets = set(by_kind.get("Secret", {}))
    claims = set(by_kind.get("PersistentVolumeClaim", {}))
    if len(deployments) != 8:
        problem(f"expected 8 Deployments, found {len(deployments)}: {sorted(deployments)}")
    for name in PUBLIC_SERVICES - set(services):
        problem(f"Service {name}, the public edge, is missing")

    for name, deployment in deployments.items():
        spec = deployment["spec"]
        template = spec["template"]
        labels = template["metadata"].get("labels", {})
        selector = spec.get("selector", {}).get("matchLabels", {})
        if not matches(selector, labels):
            problem(f"Deployment {name}: selector {selector} does not match its pod labels {labels}")
        pod = template["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            claim = volume.get("persistentVolumeClaim", {}).get("claimName")
            if claim and claim not in claims:
                problem(f"Deployment {name}: claim {claim} does not exist")
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            problem(f"Deployment {name}: pods may run as root")
        pre_stop_seconds = 0
        port_names: set[str] = set()
        for container in pod["containers"]:
            where = f"Deployment {name}, container {container['name']}"
            ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
            port_names |= set(ports)
            if "admin" not in ports or "rpc" not in ports:
                problem(f"{where}: needs ports named rpc and admin")
            for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
                get = container.get(probe, {}).get("httpGet", {})
                if get.get("path") != path or get.get("port") != "admin":
                    problem(f"{where}: {probe} must GET {path} on the admin port, has {get}")
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    if resource not in resources.get(kind, {}):
                        problem(f"{where}: no {resource} in resources.{kind}")
            for source in container.get("envFrom", []):
                if "configMapRef" in source and source["configMapRef"]["name"] not in config_maps:
                    problem(f"{where}: ConfigMap {source['configMapRef']['name']} does not exist")
                if "secretRef" in source and source["secretRef"]["name"] not in secrets:
                    problem(f"{where}: Secret {source['secretRef']['name']} does not exist")
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    problem(f"{where}: mounts {mount['name']}, which is not a volume of the pod")
            command = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
            if len(command) == 2 and command[0] == "sleep":
                pre_stop_seconds = max(pre_stop_seconds, int(command[1]))
            else:
                problem(f"{where}: no preStop sleep, so endpoints may still route to a stopping pod")
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace < pre_stop_seconds + DRAIN_SECONDS:
            problem(f"Deployment {name}: terminationGracePeriodSeconds {grace} < preStop {pre_stop_seconds} "
                    f"+ drain {DRAIN_SECONDS}")

        headless = [s for s in services.values() if matches(s["spec"].get("selector", {}), labels)]
        if not headless:
            problem(f"Deployment {name}: no Service selects its pods")
        for service in headless:
            service_name = service["metadata"]["name"]
            if service_name in PUBLIC_SERVICES:
                if service["spec"].get("clusterIP") == "None" or service["spec"].get("type", "ClusterIP") != "ClusterIP":
                    problem(f"Service {service_name}: the public edge should be a plain ClusterIP Service")
                if "http" not in {port.get("name") for port in service["spec"].get("ports", [])}:
                    problem(f"Service {service_name}: the public edge needs a port named http")
            elif service["spec"].get("clusterIP") != "None":
                problem(f"Service {service_name}: not headless (clusterIP: None)")
            for port in service["spec"].get("ports", []):
                if port.get("targetPort") not in port_names:
                    problem(f"Service {service['metadata']['name']}: targetPort {port.get('targetPort')} "
                            f"is not a named port of {name}")
        targeting = [h for h in autoscalers.values()
                     if h["spec"]["scaleTargetRef"].get("kind") == "Deployment"
                     and h["spec"]["scaleTargetRef"].get("name") == name]
        if not targeting:
            problem(f"Deployment {name}: no HorizontalPodAutoscaler targets it")
        if spec.get("replicas") is not None and targeting:
            problem(f"Deployment {name}: sets replicas although an autoscaler owns the count")
        if not any(matches(b["spec"].get("selector", {}).get("matchLabels", {}), labels) for b in budgets.values()):
            problem(f"Deployment {name}: no PodDisruptionBudget selects its pods")

    for name, autoscaler in autoscalers.items():
        spec = autoscaler["spec"]
        if autoscaler["apiVersion"] != "autoscaling/v2":
            problem(f"HorizontalPodAutoscaler {name}: apiVersion {autoscaler['apiVersion']}, not autoscaling/v2")
        if spec["scaleTargetRef"].get("name") not in deployments:
            problem(f"HorizontalPodAutoscaler {name}: targets a Deployment that does not exist")
        if not 1 <= spec.get("minReplicas", 1) <= spec["maxReplicas"]:
            problem(f"HorizontalPodAutoscaler {name}: minReplicas/maxReplicas out of order")
        if not any(m.get("resource", {}).get("name") == "cpu" for m in spec.get("metrics", [])):
            problem(f"HorizontalPodAutoscaler {name}: does not scale on CPU")
    for name, budget in budgets.items():
        selector = budget["spec"].get("selector", {}).get("matchLabels", {})
        if not any(matches(selector, d["spec"]["template"]["metadata"].get("labels", {}))
                   for d in deployments.values()):
            problem(f"PodDisruptionBudget {name}: selects no Deployment's pods")
    for name, service in services.items():
        selector = service["spec"].get("selector", {})
        if not any(matches(selector, d["spec"]["template"]["metadata"].get("labels", {}))
                   for d in deployments.values()):
            problem(f"Service {name}: selects no Deployment's pods")


def main() -> int:
    generated = subprocess.run([sys.executable, str(HERE / "generate.py"), "--check"], capture_output=True, text=True)
    if generated.returncode != 0:
        problem(generated.stderr.strip())
    check_kustomization()
    documents, renderer = render()
    check_documents(documents)
    print(f"renderer: {renderer}")
    print(f"documents: {len(documents)}")
    for text in problems:
        print(f"error: {text}", file=sys.stderr)
    if problems:
        return 1
    print("Kubernetes base OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
