#!/usr/bin/env python3
"""Checks deploy/observability offline, as CI runs it (PyYAML needed; promtool optional):

  - both Prometheus files parse; `promtool check config prometheus.yml` passes when promtool is
    installed (Debian's promtool lacks Kubernetes discovery, so prometheus-kubernetes.yml is only
    parsed and checked for its job);
  - the Grafana dashboard is valid JSON, every panel query is valid PromQL (`promtool check rules`
    on the queries, with Grafana's variables filled in), and it charts the metrics it promises.

    deploy/observability/check.py
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = pathlib.Path(__file__).resolve().parent
EXPECTED_METRICS = [
    "rpc_server_requests_total", "rpc_server_errors_total", "rpc_server_duration_seconds_bucket",
    "aviary_postgres_pool_in_use", "aviary_events_lag_seconds", "aviary_subscriptions_active",
]


def main() -> int:
    problems = []
    promtool = shutil.which("promtool")
    static = yaml.safe_load((HERE / "prometheus.yml").read_text())
    kubernetes = yaml.safe_load((HERE / "prometheus-kubernetes.yml").read_text())
    jobs = [job["job_name"] for job in static["scrape_configs"]]
    if jobs != ["aviary", "aviary-compose"]:
        problems.append(f"prometheus.yml: unexpected jobs {jobs}")
    targets = [t for group in static["scrape_configs"][0]["static_configs"] for t in group["targets"]]
    if sorted(targets) != [f"127.0.0.1:{port}" for port in range(7201, 7209)]:
        problems.append(f"prometheus.yml: the static job should scrape admin ports 7201-7208, has {targets}")
    names = [n for config in static["scrape_configs"][1]["dns_sd_configs"] for n in config["names"]]
    if "gateway" not in names:
        problems.append(f"prometheus.yml: the Compose job should find the gateway, has {names}")
    if not any("kubernetes_sd_configs" in job for job in kubernetes["scrape_configs"]):
        problems.append("prometheus-kubernetes.yml: no Kubernetes discovery")

    dashboard = json.loads((HERE / "grafana-dashboard.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for metric in EXPECTED_METRICS:
        if not any(metric in expression for expression in expressions):
            problems.append(f"grafana-dashboard.json: no panel charts {metric}")

    if promtool:
        result = subprocess.run([promtool, "check", "config", str(HERE / "prometheus.yml")],
                                capture_output=True, text=True)
        if result.returncode != 0:
            problems.append(result.stdout + result.stderr)
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": f"dashboard:query_{index}",
             "expr": expression.replace("$__rate_interval", "1m").replace("$service", ".*")}
            for index, expression in enumerate(expressions)]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as file:
            yaml.safe_dump(rules, file)
            file.flush()
            result = subprocess.run([promtool, "check", "rules", file.name], capture_output=True, text=True)
            if result.returncode != 0:
                problems.append("dashboard queries: " + result.stdout + result.stderr)

    print(f"dashboard: {len(dashboard['panels'])} panels, {len(expressions)} queries; "
          f"promtool: {'used' if promtool else 'not installed (queries and config not validated)'}")
    for text in problems:
        print(f"error: {text}", file=sys.stderr)
    if problems:
        return 1
    print("observability files OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
