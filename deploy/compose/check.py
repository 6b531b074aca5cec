#!/usr/bin/env python3
"""Checks deploy/compose/compose.yaml offline, as CI runs it (Docker is not needed; PyYAML is):

  - the file parses, and matches the Compose Specification's JSON schema when check-jsonschema is
    installed (`pip install check-jsonschema`; the script says when it is not);
  - Postgres and Redis have health checks, and every Aviary service waits for both to be healthy;
  - Redis keeps an append-only file (its event streams must survive a restart);
  - every Aviary service and the gateway runs its own executable, listens on 0.0.0.0 on the
    contract's ports, has a health check and a stop grace period longer than the drain, finds the
    services by service name, and publishes no fixed host port (so that `--scale <service>=N` works);
  - the gateway alone publishes its public port 8080.

    deploy/compose/check.py
"""
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

HERE = pathlib.Path(__file__).resolve().parent
COMPOSE = HERE / "compose.yaml"
SERVICES = {
    "auth": (7101, 7201), "tweets": (7102, 7202), "social-graph": (7103, 7203), "timeline": (7104, 7204),
    "messaging": (7105, 7205), "notifications": (7106, 7206), "media": (7107, 7207), "gateway": (7108, 7208),
}
# The services the others (and the gateway) call, by AVIARY_<SERVICE>_ADDRESSES; nothing calls the gateway.
CALLED = [name for name in SERVICES if name != "gateway"]
PUBLIC_PORT = 8080  # the gateway's HTTP/WebSocket port
DRAIN_SECONDS = 10


def seconds(text: str) -> float:
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text)):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def fixed_host_port(port) -> bool:
    """True for "8080:7101" or {published: 8080, ...}; false for "7101" or "127.0.0.1::7101"."""
    if isinstance(port, dict):
        return bool(port.get("published"))
    parts = str(port).split(":")
    return len(parts) >= 2 and parts[-2] != ""


def main() -> int:
    problems = []
    document = yaml.safe_load(COMPOSE.read_text())
    services = document.get("services", {})

    schema = "skipped (check-jsonschema is not installed)"
    if shutil.which("check-jsonschema"):
        result = subprocess.run(["check-jsonschema", "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                                capture_output=True, text=True)
        schema = "compose-spec: ok" if result.returncode == 0 else "compose-spec: FAILED"
        if result.returncode != 0:
            problems.append(result.stdout.strip() + result.stderr.strip())

    for dependency in ("postgres", "redis"):
        if "healthcheck" not in services.get(dependency, {}):
            problems.append(f"{dependency}: no healthcheck")
    redis_command = services.get("redis", {}).get("command") or []
    if "--appendonly" not in redis_command or redis_command[redis_command.index("--appendonly") + 1:][:1] != ["yes"]:
        problems.append("redis: no append-only file (command should pass --appendonly yes); a restart would lose "
                        "relayed events no consumer has taken")

    for name, (rpc, admin) in SERVICES.items():
        service = services.get(name)
        if service is None:
            problems.append(f"{name}: missing")
            continue
        environment = service.get("environment", {})
        if service.get("command") != [f"aviary-{name}"]:
            problems.append(f"{name}: command should be [aviary-{name}], is {service.get('command')}")
        if environment.get("AVIARY_HOST") != "0.0.0.0":
            problems.append(f"{name}: AVIARY_HOST must be 0.0.0.0 in a container")
        if str(environment.get("AVIARY_RPC_PORT")) != str(rpc) or str(environment.get("AVIARY_ADMIN_PORT")) != str(admin):
            problems.append(f"{name}: ports should be {rpc} and {admin}")
        for other in CALLED:
            variable = f"AVIARY_{other.upper().replace('-', '_')}_ADDRESSES"
            if environment.get(variable) != other:
                problems.append(f"{name}: {variable} should be the service name {other!r}")
        if "healthcheck" not in service:
            problems.append(f"{name}: no healthcheck")
        for dependency in ("postgres", "redis"):
            condition = service.get("depends_on", {}).get(dependency, {}).get("condition")
            if condition != "service_healthy":
                problems.append(f"{name}: should wait for {dependency} to be healthy")
        if seconds(service.get("stop_grace_period", "10s")) <= DRAIN_SECONDS:
            problems.append(f"{name}: stop_grace_period must exceed the {DRAIN_SECONDS} s drain")
        targets = set()
        for port in service.get("ports", []):
            if fixed_host_port(port):
                problems.append(f"{name}: publishes a fixed host port ({port}), which --scale cannot repeat")
            targets.add(int(port["target"]) if isinstance(port, dict) else int(str(port).split(":")[-1].split("/")[0]))
        if name == "gateway":
            if str(environment.get("AVIARY_GATEWAY_PORT")) != str(PUBLIC_PORT) or PUBLIC_PORT not in targets:
                problems.append(f"gateway: should listen on and publish its public port {PUBLIC_PORT}")
        elif PUBLIC_PORT in targets:
            problems.append(f"{name}: publishes {PUBLIC_PORT}, which only the gateway should")
        if "container_name" in service:
            problems.append(f"{name}: container_name prevents scaling")

    print(f"services: {len(services)}; schema {schema}")
    for text in problems:
        print(f"error: {text}", file=sys.stderr)
    if problems:
        return 1
    print("compose file OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
